/// A generated field enum: a field of a form or list item, which a JSON Pointer from a
/// validator or a server's problem reply maps back to, so a form can show each error next to
/// its field. Generated code supplies the token mapping; the pointer handling lives here once.
public protocol FormField: Hashable, Sendable {
    /// The field the unescaped pointer tokens (`["lines", "3", "quantity"]`) point into.
    init?(tokens: ArraySlice<String>)
    /// Appends this field's tokens.
    func appendTokens(to tokens: inout [String])
}

extension FormField {
    /// The field a JSON Pointer (`#/lines/3/quantity`) points into; nil outside the form.
    public init?(pointer: String) {
        guard let tokens = JSONPointer.tokens(pointer) else { return nil }
        self.init(tokens: tokens[...])
    }

    /// The JSON Pointer of this field.
    public var pointer: String {
        var tokens: [String] = []
        appendTokens(to: &tokens)
        return tokens.reduce(JSONPointer.root) { JSONPointer.appending($0, $1) }
    }
}
