# frozen_string_literal: true

module Hashfile
  VERSION = "0.1.0"
end
