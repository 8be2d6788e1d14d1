/// A command line the tool cannot act on: exit status 2, with `message` naming what to change.
package struct UsageError: Error, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
