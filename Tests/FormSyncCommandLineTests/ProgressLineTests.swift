import Testing

@testable import FormSyncCommandLine

/// A progress line redraws itself on a terminal and writes plain, spaced-out lines to a log.
struct ProgressLineTests {
    @Test func onATerminalEachUpdateRedrawsTheLineInPlace() {
        var line = ProgressLine(interval: 2, terminal: true)
        #expect(line.render("1/3", now: 0) == "\r1/3   ")
        #expect(line.render("2/3", now: 0.05) == "\r2/3   ")
    }

    @Test func inALogOnlyAChangedTextIsWrittenAndAtMostOnceAnInterval() {
        var line = ProgressLine(interval: 2, terminal: false)
        #expect(line.render("1/3", now: 0) == "1/3\n")
        #expect(line.render("1/3", now: 5) == nil)
        #expect(line.render("2/3", now: 1) == nil)
        #expect(line.render("2/3", now: 2.5) == "2/3\n")
        let written = [line.render("3/3", now: 3), line.render("3/3", now: 9)]
        #expect(written == [nil, "3/3\n"])
        #expect(!(written.compactMap { $0 }.joined()).contains("\r"))
    }
}
