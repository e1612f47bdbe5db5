# frozen_string_literal: true

require "test_helper"
require "hashfile/explorer"
require "json"
require "net/http"
require "open3"

# The explorer page of `hashfile serve`, over Debian's iso-codes (the
# countries of ISO 3166-1), published twice as a dataset (the second an
# edit: some countries gone, some renamed, one added): its JSON API over
# loopback, who may ask, and the page itself in headless Chromium.
class ExplorerTest < HashfileTest
  ISO = "/usr/share/iso-codes/json/iso_3166-1.json"
  CHROMIUM = %w[chromium chromium-browser].find { |c| system("command -v #{c} > /dev/null 2>&1") }
  # WRITE_SCREENSHOTS=1 keeps the page's screenshots in docs/.
  SCREENSHOTS = File.expand_path("../docs", __dir__)

  def setup
    skip "a server and a browser, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    super
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "#{ISO} is missing (iso-codes)") unless File.exist?(ISO)
    @countries = JSON.parse(File.read(ISO)).fetch("3166-1").to_h { |c| [c["alpha_2"], c] }
    @dataset = path("countries")
    Hashfile.build_sharded(@dataset, @countries, shards: 3, note: "iso-codes as Debian ships it")
    @edited = @countries.dup
    %w[AQ BV HM].each { |code| @edited.delete(code) }
    @edited["FR"] = @edited["FR"].merge("name" => "France (edited)")
    @edited["DE"] = "Germany, as a string"
    @edited["XK"] = { "alpha_2" => "XK", "name" => "Kosovo" }
    Hashfile.build_sharded(@dataset, @edited, shards: 3, note: "edited")
    @explorer = Hashfile::Explorer.new(@dataset)
    @server = Thread.new { @explorer.run }
  end

  def teardown
    @explorer&.stop
    @server&.join(5)
    super
  end

  def get(path, host: nil, method: Net::HTTP::Get, port: @explorer.port, address: "127.0.0.1")
    Net::HTTP.start(address, port) do |http|
      request = method.new(path)
      request["Host"] = host if host
      http.request(request)
    end
  end

  def api(path)
    response = get(path)
    assert_equal "200", response.code, "#{path}: #{response.body}"
    JSON.parse(response.body)
  end

  def test_the_api_answers_lookups_scans_info_history_and_diffs
    assert_equal "France (edited)", api("/api/get?key=FR").dig("value", "name")
    assert_equal({ "key" => "AQ", "found" => false }, api("/api/get?key=AQ"))

    # A filtered scan, page after page, finds what Ruby finds.
    found = []
    cursor = nil
    loop do
      page = api("/api/keys?filter=F&limit=7#{"&cursor=#{cursor}" if cursor}")
      assert_operator page["keys"].size, :<=, 7
      found.concat(page["keys"].map { |k| k["key"] })
      cursor = page["cursor"]
      break unless cursor
    end
    assert_equal @edited.keys.grep(/F/).sort, found.sort

    info = api("/api/info")
    assert_equal [true, @edited.size, 3], [info["dataset"], info.dig("info", "entries"), info.dig("info", "shards").size]
    history = api("/api/history")["history"]
    assert_equal ["edited", "iso-codes as Debian ships it"], history.map { |p| p["note"] }

    diff = api("/api/diff?a=#{history[1]["generation"]}&b=#{history[0]["generation"]}")
    summary = diff["summary"]
    assert_equal [1, 3, 2, 1], [summary["added"], summary["removed"], summary["changed"], summary["type_changed"]]
    assert_equal 6, diff["lines"].size
    assert_equal 3, summary["shards"].size
    assert_equal 6, summary["shards"].sum { |s| s["added"] + s["removed"] + s["changed"] }
  end

  def test_it_answers_only_gets_from_this_machine_by_its_own_name
    assert_equal "405", get("/api/info", method: Net::HTTP::Post).code
    # A page elsewhere that rebinds its name to 127.0.0.1 sends its own Host.
    assert_equal "421", get("/api/info", host: "attacker.example:#{@explorer.port}").code
    assert_equal "421", get("/api/info", host: "localhost:1").code
    assert_equal "200", get("/api/info", host: "localhost:#{@explorer.port}").code
    assert_equal "404", get("/api/nothing").code
    bad = get("/api/keys?cursor=1,2")
    assert_equal "400", bad.code
    assert_match(/a cursor is four integers/, JSON.parse(bad.body)["error"])
    assert_equal "400", get("/api/keys?cursor=0,0,0,-1").code
    assert_match(/key \(or key_hex\) is missing/, JSON.parse(get("/api/get").body)["error"])
  end

  def test_bound_elsewhere_every_request_needs_the_token
    other = Hashfile::Explorer.new(@dataset, bind: "127.0.0.2")
    thread = Thread.new { other.run }
    assert_match(/\A[0-9a-f]{32}\z/, other.token)
    assert_includes other.url, "?token=#{other.token}"
    assert_equal "401", get("/api/info", port: other.port, address: "127.0.0.2").code
    assert_equal "401", get("/?token=#{"0" * 32}", port: other.port, address: "127.0.0.2").code
    assert_equal "200", get("/api/info?token=#{other.token}", port: other.port, address: "127.0.0.2").code
    assert_equal "200", get("/?token=#{other.token}", port: other.port, address: "127.0.0.2").code
    assert_equal "200", get("/app.js", port: other.port, address: "127.0.0.2").code, "the page asks for it without the token"
    assert_equal "401", get("/", port: other.port, address: "127.0.0.2").code
  ensure
    other&.stop
    thread&.join(5)
  end

  # The page in a real browser: what it shows after its script ran.
  def page(fragment, screenshot: nil)
    skip_or_fail("HASHFILE_REQUIRE_CHROMIUM", "Chromium is not installed (bin/setup --all installs chromium)") unless CHROMIUM
    url = "http://127.0.0.1:#{@explorer.port}/#{fragment}"
    browser = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--window-size=1200,760", "--virtual-time-budget=10000", "--user-data-dir=#{path("chromium")}"]
    if screenshot
      at = ENV["WRITE_SCREENSHOTS"] == "1" ? File.join(SCREENSHOTS, screenshot) : path(screenshot)
      _, status = Open3.capture2e(*browser, "--screenshot=#{at}", url)
      assert status.success?
      assert_operator File.size(at), :>, 10_000, "a screenshot of the page"
    end
    dom, status = Open3.capture2(*browser, "--dump-dom", url, err: File::NULL)
    assert status.success?
    dom
  end

  def test_the_page_in_chromium_looks_up_scans_shows_info_and_diffs_generations
    looked = page("#lookup=FR", screenshot: "explorer_lookup.png")
    assert_includes looked, "France (edited)"
    assert_includes looked, "FR: map of 6"

    absent = page("#lookup=AQ")
    assert_includes absent, "not found: AQ"

    scanned = page("#keys=F", screenshot: "explorer_keys.png")
    assert_includes scanned, "#{@edited.keys.grep(/F/).size} keys shown; #{@edited.size} of #{@edited.size} records scanned (all)"

    info = page("#info", screenshot: "explorer_info.png")
    assert_includes info, "bytes per shard"
    assert_includes info, "shard 2"

    history = Hashfile.history(@dataset)
    diffed = page("#diff=#{history[1][:generation]},#{history[0][:generation]}", screenshot: "explorer_diff.png")
    assert_includes diffed, "1 added, 3 removed, 2 changed, #{@edited.size - 3} unchanged; value types changed: 1 map to string"
    assert_includes diffed, "changes per shard"
    assert_includes diffed, "Kosovo"
    assert_includes diffed, "iso-codes as Debian ships it"
  end

  def test_a_key_or_value_that_looks_like_markup_is_shown_as_text
    Hashfile.build(path("markup.hf"), { "<b>k</b>" => "<img src=x onerror=alert(1)>" })
    other = Hashfile::Explorer.new(path("markup.hf"))
    thread = Thread.new { other.run }
    skip_or_fail("HASHFILE_REQUIRE_CHROMIUM", "Chromium is not installed (bin/setup --all installs chromium)") unless CHROMIUM
    dom, = Open3.capture2(CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--user-data-dir=#{path("chromium2")}", "--dump-dom",
                          "http://127.0.0.1:#{other.port}/#keys", err: File::NULL)
    assert_includes dom, "&lt;img src=x onerror=alert(1)&gt;"
    refute_includes dom, "<img src=x"
    assert_includes dom, "&lt;b&gt;k&lt;/b&gt;"
  ensure
    other&.stop
    thread&.join(5)
  end

  def test_keys_and_values_json_cannot_hold_are_listed_as_such
    Hashfile.build(path("odd.hf"), { "ok" => 1, "\xff\xfe".b => "binary key", "nan" => Float::NAN })
    other = Hashfile::Explorer.new(path("odd.hf"))
    thread = Thread.new { other.run }
    listed = JSON.parse(get("/api/keys", port: other.port).body)
    assert_equal 3, listed["keys"].size
    by_key = listed["keys"].to_h { |k| [k["key"], k["value"]] }
    assert_equal 1, by_key["ok"]
    assert_equal "binary key", by_key[{ "$bytes" => "fffe" }]
    assert_match(/NaN/, by_key["nan"]["$not_json"])
    assert_equal "binary key", JSON.parse(get("/api/get?key_hex=fffe", port: other.port).body)["value"]
    # A cursor no answer gave is refused, naming it; one past every number, too.
    assert_match(/is not where a chunk of records starts/, JSON.parse(get("/api/keys?cursor=0,7,0,0", port: other.port).body)["error"])
    assert_equal "400", get("/api/keys?cursor=99999999999999999999999,0,0,0", port: other.port).code
    # Bound elsewhere, the page's script and style need no token; its data does.
  ensure
    other&.stop
    thread&.join(5)
  end
end
