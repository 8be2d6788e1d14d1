/// One field a version changed: where (a JSON Pointer into the payload, as a URI fragment like field errors: `#/name`), what it held before
/// and what it holds now. An absent `old` is a field the version added; an absent `new`, one it
/// removed.
public struct FieldChange: Codable, Sendable, Equatable {
    public var pointer: String
    public var old: WireValue?
    public var new: WireValue?

    public init(pointer: String, old: WireValue?, new: WireValue?) {
        self.pointer = pointer
        self.old = old
        self.new = new
    }
}
