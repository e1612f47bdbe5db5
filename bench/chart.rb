# frozen_string_literal: true

# A horizontal bar chart as SVG, on a log axis when the values span orders
# of magnitude (a cold open in microseconds beside a parse in milliseconds).
# Written here rather than drawn with gruff because gruff has no log axis;
# SVG renders in a browser and on GitHub.
module BenchChart
  module_function

  # bars: [[label, seconds], ...]. Writes +path+.
  def log_bars(path, title, bars)
    width = 900
    left = 300
    right = 120
    row = 34
    top = 50
    height = top + row * bars.size + 40
    values = bars.map(&:last)
    lo = 10**Math.log10(values.min).floor
    hi = 10**Math.log10(values.max).ceil
    hi *= 10 if hi == lo
    x = ->(v) { left + (width - left - right) * (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) }
    out = []
    out << %(<svg xmlns="http://www.w3.org/2000/svg" width="#{width}" height="#{height}" font-family="sans-serif" font-size="14">)
    out << %(<rect width="100%" height="100%" fill="white"/>)
    out << %(<text x="#{width / 2}" y="28" text-anchor="middle" font-size="18">#{escape(title)}</text>)
    decade = lo
    while decade <= hi
      gx = x[decade].round(1)
      out << %(<line x1="#{gx}" y1="#{top - 6}" x2="#{gx}" y2="#{height - 34}" stroke="#ddd"/>)
      out << %(<text x="#{gx}" y="#{height - 16}" text-anchor="middle" fill="#555">#{escape(duration(decade))}</text>)
      decade *= 10
    end
    bars.each_with_index do |(label, value), i|
      y = top + i * row
      out << %(<text x="#{left - 8}" y="#{y + 18}" text-anchor="end">#{escape(label)}</text>)
      out << %(<rect x="#{left}" y="#{y + 4}" width="#{[x[value] - left, 1].max.round(1)}" height="#{row - 10}" fill="#{label.start_with?("Hashfile") ? "#c0392b" : "#7f8c8d"}"/>)
      out << %(<text x="#{x[value].round(1) + 6}" y="#{y + 18}">#{escape(duration(value))}</text>)
    end
    out << "</svg>"
    File.write(path, "#{out.join("\n")}\n")
  end

  def duration(seconds)
    if seconds >= 1 then format("%.3g s", seconds)
    elsif seconds >= 1e-3 then format("%.3g ms", seconds * 1e3)
    elsif seconds >= 1e-6 then format("%.3g µs", seconds * 1e6)
    else
      format("%.3g ns", seconds * 1e9)
    end
  end

  def escape(text)
    text.to_s.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;")
  end
end
