# frozen_string_literal: true

require_relative "test_helper"

# The Railtie, in a minimal Rails app booted in a child process (a Rails
# application is one per process): stores open at boot under their names,
# config.hashfile.i18n serves I18n, `rake hashfile:i18n` builds that store
# from the app's load path, and a missing store fails the boot clearly.
class RailtieTest < HashfileTest
  def setup
    super
    skip "not run under GC.stress: booting Rails" if ENV["HASHFILE_GC_STRESS"] == "1"
    begin
      require "rails"
    rescue LoadError
      skip_or_fail("HASHFILE_REQUIRE_RAILS", "install ruby-railties for the Railtie test (bin/setup --all does)")
    end
  end

  # An app in `root` laid out as `rails new` lays one out
  # (config/application.rb with `config`, Ruby lines for the application
  # class; config/environment.rb initializes it); runs `script` (which
  # requires config/application.rb) in a new process: stdout, stderr and
  # status.
  def boot(root, config, script)
    File.write(File.join(root, "config/application.rb"), <<~RUBY)
      $LOAD_PATH.unshift #{File.expand_path("../lib", __dir__).inspect}
      require "rails"
      require "hashfile"
      class TestApp < Rails::Application
        config.root = #{root.inspect}
        config.eager_load = false
        config.logger = Logger.new(nil)
        config.secret_key_base = "x" * 64
        #{config}
      end
    RUBY
    File.write(File.join(root, "config/environment.rb"), "require_relative \"application\"\nRails.application.initialize!\n")
    File.write(File.join(root, "script.rb"), "require_relative \"config/application\"\n#{script}")
    Open3.capture3(RbConfig.ruby, File.join(root, "script.rb"))
  end

  def test_stores_and_i18n_from_config
    require "open3"
    root = path("app")
    FileUtils.mkdir_p(File.join(root, "config/locales"))
    Hashfile.build(File.join(root, "config/flags.hf"), { "checkout" => { "enabled" => true } })
    File.write(File.join(root, "config/locales/en.yml"), "en:\n  hello: \"Hello %{name}\"\n")
    File.write(File.join(root, "config/locales/de.yml"), "de:\n  hello: \"Hallo %{name}\"\n")
    # The app's config/locales/*.yml are on its load path, as in any app.
    require "support/servers"
    @nginx = Hashfile::TestServers::Nginx.new
    Hashfile.build(path("prices.hf"), { "sku-1" => 250 })
    @nginx.publish("prices.hf", path("prices.hf"))
    config = <<~RUBY
      config.hashfile.stores = { flags: "config/flags.hf", prices: { location: #{@nginx.url("/files/prices.hf").inspect}, timeout: 5 } }
      config.hashfile.i18n = "config/locales.hf"
    RUBY
    # Missing store: the boot says what to run.
    _out, err, status = boot(root, config, "Rails.application.initialize!")
    refute status.success?
    assert_match(%r{config.hashfile.i18n names .*config/locales.hf, which does not exist: build it with `rake hashfile:i18n`}, err)
    # The rake task builds it from the app's load path (Rails' own locale
    # files included), then the app serves from it.
    out, err, status = boot(root, config, <<~RUBY)
      require "rake"
      Rails.application.load_tasks
      Rake::Task["hashfile:i18n"].invoke
    RUBY
    assert status.success?, err
    assert_match(/wrote config\/locales.hf: 2 locales from \d+ files/, out)
    assert_match(/left to a chained I18n::Backend::Simple .*en.rb/, out)
    out, err, status = boot(root, config, <<~RUBY)
      Rails.application.initialize!
      puts I18n.backend.class
      puts I18n.t("hello", name: "Ann", locale: :de)
      puts I18n.t("date.formats.default", locale: :en)
      puts Hashfile.stores[:flags].dig("checkout", "enabled")
      puts Hashfile.stores[:prices]["sku-1"]
    RUBY
    assert status.success?, err
    # Chained: Active Support's en.rb (Ruby, not data) stays with Simple.
    assert_equal ["Hashfile::I18n::Chain", "Hallo Ann", "%Y-%m-%d", "true", "250"], out.lines.map(&:chomp)
  ensure
    @nginx&.stop
  end
end
