# frozen_string_literal: true

require_relative "test_helper"
require "open3"
require "zlib"
require "json"
require "support/servers"
require "ripper"

# Every snippet of the README and docs/ runs: the ```ruby blocks of a file
# in order, in one Ruby process (a later block may use what an earlier one
# made), and each line of a ```sh block in bash, with `hashfile` being this
# checkout's CLI. Both run in a directory holding the files the snippets
# name (fixtures below). A URL at cdn.example.com is served by nginx on
# loopback. A line `EXPRESSION # => VALUE` checks that EXPRESSION equals
# VALUE where VALUE (or its start, before a `, `, `; ` or ` (` comment) is
# Ruby. A block right after `<!-- not run: REASON -->` is left out: the
# reason names the test that runs the same thing (a Rails config file, an
# S3 bucket). The Rust snippets run as doctests (crates/hashfile/src/lib.rs).
class DocsTest < HashfileTest
  ROOT = File.expand_path("..", __dir__)
  DOCS = ["README.md", *Dir[File.join(ROOT, "docs/*.md")].map { |f| f.delete_prefix("#{ROOT}/") }.sort].freeze

  def setup
    skip "not run under GC.stress: the docs, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    super
    @nginx = Hashfile::TestServers::Nginx.new
  end

  def teardown
    @nginx&.stop
    super
  end

  # [language, code, line] of each fenced block of +doc+ that is run.
  def blocks(doc)
    found = []
    lines = File.readlines(File.join(ROOT, doc))
    lines.each_with_index do |line, i|
      next unless (lang = line[/\A```(\w+)\s*\z/, 1])

      before = lines[0...i].reverse.find { |l| !l.strip.empty? }.to_s
      body = lines[(i + 1)..].take_while { |l| !l.start_with?("```") }.join
      found << [lang, body, i + 1] unless before.start_with?("<!-- not run:")
    end
    found
  end

  # The files the snippets name, in +dir+.
  def fixtures(dir)
    write = ->(name, text) { FileUtils.mkdir_p(File.dirname(File.join(dir, name))); File.write(File.join(dir, name), text) }
    write["config.json", JSON.generate({ "limits.api" => "50", "feature.checkout" => "on", "limits" => { "api" => { "burst" => 100 } } })]
    write["a.csv", "sku,name,price\nA1,apple,1.20\nB2,banana,0.50\n"]
    write["b.csv", "sku,name,price\nA1,apple,1.25\nC3,cherry,3.00\n"]
    write["export.csv", "sku,name,price\nA1,apple,1.20\nB2,banana,0.50\n"]
    write["export.tsv", "# an export\nkey\tvalue\nx\t\"quoted\n"]
    write["part1.jsonl", %(["k1", 1]\n["k2", 2]\n)]
    write["part2.jsonl", %(["k2", 20]\n["k3", 3]\n)]
    write["events.jsonl", %({"key":"e1","value":"login"}\n{"key":"e2","value":"logout"}\n)]
    write["oui.csv", "Registry,Assignment,Organization Name\nMA-L,00000C,Cisco Systems\nMA-L,0050C2,IEEE\n"]
    write["locales/en.yml", "en:\n  hello: Hello %{name}\n  date:\n    formats:\n      short: \"%b %d\"\n    day_names: [Sunday, Monday]\n"]
    write["locales/de.yml", "de:\n  hello: Hallo %{name}\n  date:\n    formats:\n      short: \"%d. %b\"\n"]
    Zlib::GzipWriter.open(File.join(dir, "dump.jsonl.gz")) { |gz| gz.write(%(["a", 1]\n["b", 2]\n)) }
    Hashfile.build(@nginx.file("config.hf"), JSON.parse(File.read(File.join(dir, "config.json"))))
    FileUtils.mkdir_p(File.dirname(@nginx.file("stores/tenants.hf")))
    Hashfile.build(@nginx.file("stores/tenants.hf"), (1..100).to_h { |i| ["tenant:#{i}", { "plan" => "pro", "id" => i }] })
    bin = File.join(dir, "bin")
    write["bin/hashfile", "#!/bin/sh\nexec #{RbConfig.ruby} -I#{ROOT}/lib #{ROOT}/exe/hashfile \"$@\"\n"]
    File.chmod(0o755, File.join(bin, "hashfile"))
  end

  # +code+ with each `EXPRESSION # => VALUE` line made a check of what the
  # doc claims; lines whose VALUE is not Ruby (`#<Reader ...>`) stay as
  # they are. +where+ names the block.
  def with_checks(code, where)
    code.lines.each_with_index.map do |line, i|
      match = line.chomp.match(/\A(\s*)(\S.*?)\s+# => (.+)\z/)
      next line unless match && valid_ruby?(match[2])

      indent, expression, claim = match.captures
      value = [claim.strip, claim.split(/, (?=[a-z])|; | \(/).first.strip].find { |v| literal?(v) }
      value ? "#{indent}__doc_check((#{expression}), (#{value}), #{"#{where}+#{i + 1}".inspect})\n" : line
    end.join
  end

  def valid_ruby?(source)
    !Ripper.sexp(source).nil?
  end

  # Whether +source+ is one Ruby value that needs nothing defined: `50`,
  # `"France"`, `{api: {burst: 100}}`, not `#<Reader ...>` (a comment) or
  # `100; decodes only ...` (prose).
  def literal?(source)
    sexp = Ripper.sexp(source)
    return false unless sexp && sexp[1].size == 1 && !source.start_with?("#")

    Object.new.instance_eval(source)
    true
  rescue StandardError, ScriptError
    false
  end

  # +code+ with its example URLs pointed at nginx (the private location,
  # which wants the Authorization header the snippets send).
  def served(code)
    code.gsub("https://cdn.example.com/", @nginx.url("/private/"))
  end

  def test_every_ruby_snippet_runs
    DOCS.each do |doc|
      ruby = blocks(doc).select { |lang, *| lang == "ruby" }
      next if ruby.empty?

      dir = File.join(tmpdir, File.basename(doc, ".md"))
      FileUtils.mkdir_p(dir)
      fixtures(dir)
      prelude = <<~RUBY
        require "hashfile"; require "i18n"; I18n.load_path = Dir["locales/*.yml"]; I18n.enforce_available_locales = false
        def __doc_check(actual, claimed, where)
          abort "\#{where}: the doc says \#{claimed.inspect}, the code gives \#{actual.inspect}" unless actual == claimed
        end
      RUBY
      script = prelude + ruby.map { |_, code, line| "# #{doc}:#{line}\n#{with_checks(served(code), "#{doc}:#{line}")}" }.join("\n")
      out, status = Open3.capture2e(RbConfig.ruby, "-I#{ROOT}/lib", "-e", script, chdir: dir)
      assert status.success?, "#{doc}'s Ruby snippets failed:\n#{out}"
    end
  end

  def test_every_shell_snippet_runs
    DOCS.each do |doc|
      blocks(doc).select { |lang, *| lang == "sh" }.each do |_, code, line|
        dir = File.join(tmpdir, "#{File.basename(doc, ".md")}-#{line}")
        FileUtils.mkdir_p(dir)
        fixtures(dir)
        env = { "PATH" => "#{dir}/bin:#{ENV.fetch("PATH")}" }
        served(code).each_line do |command|
          next if command.strip.empty? || command.start_with?("#")

          out, status = Open3.capture2e(env, "bash", "-o", "pipefail", "-c", command, chdir: dir)
          assert status.success?, "#{doc}:#{line}: #{command.strip} failed:\n#{out}"
        end
      end
    end
  end

  def test_every_link_to_a_file_of_the_repository_leads_to_one
    DOCS.each do |doc|
      File.read(File.join(ROOT, doc)).scan(/\]\(([^)\s]+)\)/).flatten.each do |target|
        next if target.match?(%r{\A(https?:|mailto:|#)})

        file = File.expand_path(target.sub(/#.*/, ""), File.dirname(File.join(ROOT, doc)))
        assert File.exist?(file), "#{doc} links to #{target}, which is not there"
      end
    end
  end

  def test_the_readme_is_short
    assert_operator File.readlines(File.join(ROOT, "README.md")).size, :<, 300
  end
end
