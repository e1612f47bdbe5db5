# frozen_string_literal: true

# Writes a Makefile that builds the extension with cargo (no rb_sys gem
# needed) and installs it where RubyGems asks: `gem install --local` works
# offline as long as cargo can reach its registry cache or crates.io.
require "mkmf"
require "rbconfig"

cargo = ENV.fetch("CARGO", "cargo")
abort "hashfile: cargo is required to build the extension (https://rustup.rs)" unless find_executable(cargo)

root = File.expand_path("../..", __dir__)
dlext = RbConfig::CONFIG["DLEXT"]
built = RbConfig::CONFIG["host_os"].match?(/darwin/) ? "libhashfile_ruby.dylib" : "libhashfile_ruby.so"
# Its own target directory, removed after install with the build's own copy
# of the library, so the installed gem keeps neither cargo's build tree
# (541 MB) nor a third copy of the extension (RubyGems puts one in the
# extension directory and one in lib/). A checkout builds with `rake compile`.
#
# HASHFILE_GEM_TARGET_DIR names another target directory, which the install
# then keeps: CI points it at the checkout's, so the gem's build compiles
# the project's crates from the gem's own sources but reuses the
# dependencies `rake compile` built (3 minutes on 2 cores otherwise).
shared_target_dir = ENV.fetch("HASHFILE_GEM_TARGET_DIR", nil)
target_dir = shared_target_dir || File.join(__dir__, "target")
remove_build = shared_target_dir ? "rm -f $(SO)" : "rm -rf #{target_dir} $(SO)"
install_dir = "$(DESTDIR)#{RbConfig::CONFIG["sitearchdir"]}/hashfile"
# Release unless HASHFILE_CARGO_PROFILE names another (the Rakefile says why
# CI does).
profile = ENV.fetch("HASHFILE_CARGO_PROFILE", "release")
profile_dir = profile == "dev" ? "debug" : profile

File.write("Makefile", <<~MAKE)
  SO = hashfile_ruby.#{dlext}

  all: $(SO)

  $(SO):
  \t#{cargo} build --profile #{profile} --locked -p hashfile-ruby --manifest-path #{File.join(root, "Cargo.toml")} --target-dir #{target_dir}
  \tcp #{File.join(target_dir, profile_dir, built)} $(SO)

  install: $(SO)
  \tmkdir -p #{install_dir}
  \tcp $(SO) #{install_dir}/$(SO)
  \t#{remove_build}

  clean:
  \t#{remove_build}

  .PHONY: all install clean
MAKE
