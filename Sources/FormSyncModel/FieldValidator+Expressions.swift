import Foundation

/// The rules a spec's expressions add (`relevant:`, `constraint:`, `calculate:`,
/// `choice_filter:`), each given the expression's verdict by the generated code or the interpreter.
extension FieldValidator {
    /// A field that does not apply (its `relevant:` is not true) must hold nothing.
    public mutating func notRelevant(holdsValue: Bool, at pointer: @autoclosure () -> String) {
        if holdsValue { fail(pointer(), "not_relevant", "This field does not apply here; leave it empty.") }
    }

    /// A field's `constraint:`, checked when the field holds a value: it fails only when it is
    /// known to be false (a value it reads that is missing is `required`'s business).
    public mutating func constraint(_ verdict: Bool?, holdsValue: Bool, message: String, at pointer: @autoclosure () -> String) {
        if holdsValue && verdict == false { fail(pointer(), "constraint", message) }
    }

    /// A calculated field holds what its calculation gives (`recalculated()` puts it there) or
    /// nothing: a sender may leave the derivation to the receiver, never get it wrong.
    public mutating func calculated<T: Equatable>(_ value: T?, _ expected: @autoclosure () -> T?, at pointer: @autoclosure () -> String) {
        guard value != nil else { return }
        let expected = expected()
        guard value != expected else { return }
        if let expected {
            fail(pointer(), "calculated", "Must be \(expected), as its calculation gives.")
        } else {
            fail(pointer(), "calculated", "Must be empty: its calculation has no value.")
        }
    }

    /// A chosen option must be one the field's `choice_filter:` offers.
    public mutating func offered(_ verdict: Bool?, value: String, at pointer: @autoclosure () -> String) {
        if verdict != true { fail(pointer(), "not_offered", "'\(value)' is not offered here.") }
    }
}
