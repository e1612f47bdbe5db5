# frozen_string_literal: true

require "i18n"
require_relative "../i18n"

module Hashfile
  module I18n
    # I18n::Backend::Chain as the Railtie sets it up (the store first, then
    # a Simple backend for Ruby locale files), answering +t(nil)+ as a
    # single Simple backend does: nil. The i18n gem's Chain asks every
    # backend, gets nil from each, and reports a missing translation.
    class Chain < ::I18n::Backend::Chain
      def translate(locale, key, default_options = ::I18n::EMPTY_HASH)
        return nil if key.nil? && !default_options.key?(:default)

        super
      end
    end
  end
end
