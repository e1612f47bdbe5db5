# frozen_string_literal: true

require_relative "test_helper"
require "support/servers"

# The servers the remote tests start must stop when asked: a stop that
# waits forever holds up the whole suite (as one did in CI).
class ServersTest < Minitest::Test
  # A process started like a server, with a temporary directory.
  class Child
    include Hashfile::TestServers::ServerProcess

    attr_reader :pid, :dir

    def initialize(script)
      @dir = Dir.mktmpdir("hashfile-servers-test")
      ready, ready_w = IO.pipe
      @pid = spawn(RbConfig.ruby, "-e", "#{script}; $stdout.puts(:ready); $stdout.flush; sleep", out: ready_w)
      ready_w.close
      ready.gets # its handlers are in place
      ready.close
    end
  end

  def setup
    @children = []
  end

  # Whatever a failed stop left behind.
  def teardown
    @children.each do |child|
      Process.kill("KILL", child.pid)
      Process.wait(child.pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end

  def start(script)
    Child.new(script).tap { |child| @children << child }
  end

  def gone?(pid)
    Process.kill(0, pid)
    false
  rescue Errno::ESRCH
    true
  end

  # What nginx does when a TERM lands between its check and its wait.
  def test_a_server_that_misses_the_first_term_is_asked_again
    server = start('terms = 0; trap("TERM") { exit if (terms += 1) == 2 }')
    # Well within the grace: it is asked again, not killed.
    Timeout.timeout(10) { server.stop(grace: 30) }
    assert gone?(server.pid)
    refute File.exist?(server.dir)
  end

  def test_a_server_that_ignores_term_is_killed_after_the_grace
    server = start('trap("TERM") { }')
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    Timeout.timeout(10) { server.stop(grace: 0.5) }
    assert gone?(server.pid)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.5
  end
end
