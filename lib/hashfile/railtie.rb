# frozen_string_literal: true

require "rails/railtie"
require "i18n"
require_relative "../hashfile"
require_relative "i18n"

module Hashfile
  # Stores opened by the Railtie, by the names config.hashfile.stores gives
  # them: `Hashfile.stores[:flags]["checkout"]`.
  def self.stores
    @stores ||= {}
  end

  # Rails wiring, loaded when Rails is (lib/hashfile.rb requires it then):
  #
  #   # config/application.rb
  #   config.hashfile.stores = { flags: "config/flags.hf", prices: "/srv/data/prices.hf",
  #                              tenants: { location: "https://cdn.example.com/tenants.hf", prefetch_index: true } }
  #   config.hashfile.i18n = "config/locales.hf"   # serve I18n from a store
  #   config.hashfile.reload = 10                  # seconds; nil keeps the files opened at boot
  #
  # Stores open at boot, before the app's initializers, so with Puma's
  # preload_app! the master maps them once and every worker shares the
  # pages; with reload, each worker picks up a newly published file on its
  # own. Nothing is needed in on_worker_boot. `rake hashfile:i18n` builds
  # config.hashfile.i18n from the app's I18n.load_path.
  class Railtie < ::Rails::Railtie
    config.hashfile = ActiveSupport::OrderedOptions.new
    config.hashfile.stores = {}
    config.hashfile.i18n = nil
    config.hashfile.reload = nil

    initializer "hashfile.stores", before: :load_config_initializers do |app|
      options = app.config.hashfile
      Hashfile.stores.each_value(&:close)
      Hashfile.stores.clear
      options.stores.each do |name, store|
        Hashfile.stores[name.to_sym] = Railtie.open_store(app, store, options.reload)
      end
    end

    class << self
      # True while `rake hashfile:i18n` boots the app to read its load
      # path: the store it builds is not there to serve yet.
      attr_accessor :building_i18n

      # A store of config.hashfile.stores: a path (relative to the app's
      # root), a URL, or a Hash of a +location+ and Hashfile.open's options
      # (headers:, timeout:, prefetch_index:, ...). +reload+ applies to a
      # local store as reload:, and makes a remote one reopen when replaced.
      # @api private
      def open_store(app, store, reload)
        options = {}
        if store.is_a?(Hash)
          options = store.transform_keys(&:to_sym)
          store = options.delete(:location) or raise ArgumentError, "config.hashfile.stores: a Hash needs location: (a path or URL), got #{options.keys}"
        end
        store = store.to_s
        if Hashfile.remote?(store)
          Hashfile.open(store, on_change: reload ? :reopen : :raise, **options)
        else
          Hashfile.open(app.root.join(store).to_s, reload: reload, **options)
        end
      end
    end

    # Ruby locale files (code, such as pluralization rules) from
    # I18n.load_path, which a store cannot hold: served by a Simple backend
    # chained after the store's.
    class RubyLocaleFiles < ::I18n::Backend::Simple
      def load_translations(*filenames)
        filenames = ::I18n.load_path.flatten.map(&:to_s).select { |f| f.end_with?(".rb") } if filenames.empty?
        super(*filenames)
      end
    end

    # Before Rails applies config.i18n, which installs the backend it names.
    initializer "hashfile.i18n", before: "i18n.callbacks" do |app|
      file = app.config.hashfile.i18n
      if file && !Railtie.building_i18n
        require_relative "i18n/backend"
        path = app.root.join(file).to_s
        unless File.exist?(path)
          raise Hashfile::Error, "config.hashfile.i18n names #{path}, which does not exist: build it with `rake hashfile:i18n` " \
                                 "(or hashfile build-i18n)"
        end
        backend = Hashfile::I18n::Backend.new(path, reload: app.config.hashfile.reload)
        ruby_files = app.config.i18n.railties_load_path.to_a.flatten.map(&:to_s) + ::I18n.load_path.flatten.map(&:to_s)
        backend = Hashfile::I18n::Chain.new(backend, RubyLocaleFiles.new) if ruby_files.any? { |f| f.end_with?(".rb") }
        app.config.i18n.backend = backend
      end
    end

    rake_tasks do
      namespace :hashfile do
        task :building_i18n do
          Hashfile::Railtie.building_i18n = true
        end

        desc "Build config.hashfile.i18n from the app's I18n.load_path (every locale file the app and its gems load)"
        task i18n: %i[building_i18n environment] do
          app = Rails.application
          file = app.config.hashfile.i18n or abort "set config.hashfile.i18n to the store to build"
          files = ::I18n.load_path.flatten.map(&:to_s)
          ruby, data = files.partition { |f| f.end_with?(".rb") }
          result = Hashfile::I18n.build(data, app.root.join(file).to_s)
          puts "wrote #{file}: #{result[:entries]} locales from #{data.size} files"
          puts "left to a chained I18n::Backend::Simple (Ruby, not data): #{ruby.join(", ")}" unless ruby.empty?
        end
      end
    end
  end
end
