# frozen_string_literal: true

require_relative "lib/hashfile/version"

Gem::Specification.new do |spec|
  spec.name = "hashfile"
  spec.version = Hashfile::VERSION
  spec.summary = "Immutable key-value files that open in microseconds and read like a Hash"
  spec.description = "A build step writes an immutable file indexed by a CHD minimal perfect hash with " \
                     "bit-packed seeds; opening it is an mmap and a header check. Rust core, magnus binding. " \
                     "Includes BitPacking, the bitpacking gem's API on the bitpacking crate."
  spec.authors = ["Hashfile developers"]
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.0"
  spec.files = Dir[
    "lib/**/*.rb", "lib/hashfile/explorer/*", "exe/*", "README.md", "LICENSE", "docs/*.md",
    "Cargo.toml", "Cargo.lock",
    "crates/hashfile/Cargo.toml", "crates/hashfile/README.md", "crates/hashfile/src/**/*.rs", "crates/hashfile/benches/*.rs",
    "crates/hashfile/examples/support/*.rs",
    "crates/hashfile-remote/Cargo.toml", "crates/hashfile-remote/README.md", "crates/hashfile-remote/src/**/*.rs",
    "crates/hashfile-runtime/Cargo.toml", "crates/hashfile-runtime/README.md", "crates/hashfile-runtime/src/**/*.rs",
    "crates/hashfile-runtime/benches/*.rs",
    "ext/hashfile/Cargo.toml", "ext/hashfile/extconf.rb", "ext/hashfile/src/**/*.rs",
    # A member of the workspace the gem's Cargo.toml names (the JVM
    # binding's native half): its manifest and sources, never built here.
    "jvm/native/Cargo.toml", "jvm/native/src/**/*.rs",
    # The patched YAML parser the workspace's [patch.crates-io] points at.
    "vendor/yaml-rust2/Cargo.toml", "vendor/yaml-rust2/src/**/*.rs", "vendor/yaml-rust2/*-LICENSE", "vendor/yaml-rust2/*.md"
  ]
  spec.bindir = "exe"
  spec.executables = ["hashfile"]
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/hashfile/extconf.rb"]
end
