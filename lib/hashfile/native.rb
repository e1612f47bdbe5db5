# frozen_string_literal: true

# Loads the compiled extension: from lib/hashfile when built in a checkout
# (`rake compile`), or from the gem's extension directory when installed.
# The error classes come first: the extension raises them.
require_relative "errors"
begin
  require_relative "hashfile_ruby"
rescue LoadError
  require "hashfile/hashfile_ruby"
end
