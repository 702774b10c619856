import Foundation

/// A small SVG writer for the lab's charts: bar charts and line charts with axes and a legend.
/// No Swift plotting library is available to this project, and these charts need only rectangles,
/// polylines and text.
public struct SVGChart {
    public struct Series {
        public let name: String
        public let values: [Double]
        public let color: String

        public init(name: String, values: [Double], color: String) {
            self.name = name
            self.values = values
            self.color = color
        }
    }

    public enum Kind { case bars, lines }

    public let title: String
    public let xLabel: String
    public let yLabel: String
    public let series: [Series]
    public let kind: Kind
    public var yRange: ClosedRange<Double>?
    /// A horizontal reference line (expected value), drawn dashed.
    public var reference: Double?
    public var width = 720.0
    public var height = 320.0

    public init(title: String, xLabel: String, yLabel: String, series: [Series], kind: Kind) {
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.series = series
        self.kind = kind
    }

    public static let palette = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"]

    public func render() -> String {
        let left = 76.0
        let right = 16.0
        let top = 36.0
        let bottom = 48.0
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let allValues = series.flatMap(\.values) + (reference.map { [$0] } ?? [])
        let low = yRange?.lowerBound ?? min(0, allValues.min() ?? 0)
        var high = yRange?.upperBound ?? (allValues.max() ?? 1)
        if high <= low { high = low + 1 }
        let count = max(series.map(\.values.count).max() ?? 1, 1)
        func x(_ index: Double) -> Double { left + plotWidth * index / Double(count) }
        func y(_ value: Double) -> Double { top + plotHeight * (1 - (min(max(value, low), high) - low) / (high - low)) }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Int(width / 2))" y="20" text-anchor="middle" font-size="14">\(escape(title))</text>

            """
        // Axes and ticks.
        svg +=
            line(left, top, left, top + plotHeight) + line(left, top + plotHeight, left + plotWidth, top + plotHeight)
        for tick in 0...4 {
            let value = low + (high - low) * Double(tick) / 4
            let ty = y(value)
            svg += line(left - 4, ty, left, ty)
            svg +=
                "<text x=\"\(fmt(left - 6))\" y=\"\(fmt(ty + 4))\" text-anchor=\"end\">\(fmt(value, digits: 2))</text>\n"
        }
        for tick in 0...4 {
            let index = Double(count) * Double(tick) / 4
            svg +=
                "<text x=\"\(fmt(x(index)))\" y=\"\(fmt(top + plotHeight + 16))\" text-anchor=\"middle\">\(Int(index))</text>\n"
        }
        svg +=
            "<text x=\"\(fmt(left + plotWidth / 2))\" y=\"\(fmt(height - 10))\" text-anchor=\"middle\">\(escape(xLabel))</text>\n"
        svg +=
            "<text transform=\"translate(14 \(fmt(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">\(escape(yLabel))</text>\n"

        switch kind {
        case .bars:
            let groupWidth = plotWidth / Double(count)
            let barWidth = groupWidth / Double(max(series.count, 1))
            for (s, serie) in series.enumerated() {
                for (index, value) in serie.values.enumerated() {
                    let bx = x(Double(index)) + barWidth * Double(s)
                    let by = y(value)
                    svg +=
                        "<rect x=\"\(fmt(bx))\" y=\"\(fmt(by))\" width=\"\(fmt(max(barWidth - 0.5, 0.5)))\" "
                        + "height=\"\(fmt(max(top + plotHeight - by, 0)))\" fill=\"\(serie.color)\" fill-opacity=\"0.8\"/>\n"
                }
            }
        case .lines:
            for serie in series {
                let points = serie.values.enumerated().map {
                    "\(fmt(x(Double($0.offset) + 0.5))),\(fmt(y($0.element)))"
                }
                svg +=
                    "<polyline fill=\"none\" stroke=\"\(serie.color)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>\n"
            }
        }
        if let reference {
            svg +=
                "<line x1=\"\(fmt(left))\" y1=\"\(fmt(y(reference)))\" x2=\"\(fmt(left + plotWidth))\" y2=\"\(fmt(y(reference)))\" "
                + "stroke=\"black\" stroke-dasharray=\"4 3\" stroke-width=\"1\"/>\n"
        }
        for (s, serie) in series.enumerated() {
            let ly = top + 4 + Double(s) * 15
            svg +=
                "<rect x=\"\(fmt(left + plotWidth - 170))\" y=\"\(fmt(ly))\" width=\"10\" height=\"10\" fill=\"\(serie.color)\"/>"
            svg += "<text x=\"\(fmt(left + plotWidth - 155))\" y=\"\(fmt(ly + 9))\">\(escape(serie.name))</text>\n"
        }
        return svg + "</svg>\n"
    }

    private func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double) -> String {
        "<line x1=\"\(fmt(x1))\" y1=\"\(fmt(y1))\" x2=\"\(fmt(x2))\" y2=\"\(fmt(y2))\" stroke=\"black\" stroke-width=\"1\"/>\n"
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}

func fmt(_ value: Double, digits: Int = 2) -> String {
    if value == value.rounded(), abs(value) < 1e9 { return String(Int(value)) }
    return String(format: "%.\(digits)f", value)
}
