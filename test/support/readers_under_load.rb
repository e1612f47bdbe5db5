# frozen_string_literal: true

# Readers of a dataset under load while it is published again and again
# (rollbacks, patches): threads of this process and forked children, each
# looking up +keys+ in one batch over and over and noting the value each
# batch held, which must be the same for every key (one generation, never
# a mix). Shared by test/rollback_test.rb and test/patch_test.rb.
module ReadersUnderLoad
  # Looks up every key in one batch until +stop+ says so; returns the
  # values seen in turn, each batch checked to be of one generation.
  def read_until(db, keys, stop)
    seen = []
    until stop.call
      tags = db.values_at(*keys).uniq
      raise "a batch mixed generations: #{tags.inspect}" unless tags.size == 1

      seen << tags.first if seen.last != tags.first
    end
    seen
  end

  # Opens +dir+ with reload: 0 in 3 threads and 2 forked children, each
  # reading +keys+ until +publish+ (given +dir+) returns; returns what
  # +publish+ returned and what each reader saw. A child that failed
  # fails the test.
  def readers_during(dir, keys, &publish)
    db = Hashfile.open(dir, reload: 0)
    done = false
    threads = 3.times.map { Thread.new { read_until(db, keys, -> { done }) } }
    children = 2.times.map { fork_reader(dir, keys) }
    result = nil
    begin
      result = publish.call(dir)
      sleep 0.3 # each reader's next check finds the last publish
    ensure
      # The children stop whatever happened here.
      File.write("#{dir}.done", "")
      done = true
    end
    seen = threads.map(&:value)
    children.each do |pid, reader|
      got = Marshal.load(reader.read)
      _, status = Process.wait2(pid)
      assert status.success?, "a child: #{got}"
      seen << got
    end
    [result, seen, db]
  end

  # A forked child reading +keys+ from +dir+ until "#{dir}.done" appears:
  # its pid, and the pipe it reports on.
  def fork_reader(dir, keys)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      child = Hashfile.open(dir, reload: 0)
      seen = read_until(child, keys, -> { File.exist?("#{dir}.done") })
      writer.write(Marshal.dump(seen))
      exit!(0)
    rescue StandardError => e
      writer.write(Marshal.dump(e.message))
      exit!(1)
    end
    writer.close
    [pid, reader]
  end
end
