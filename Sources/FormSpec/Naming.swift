/// Name conversions and the names a spec may not use. The checker and the generator share these
/// so that what is checked is exactly what is emitted.
public enum Naming {
    /// `due_date` and `dueDate` both become `dueDate`.
    public static func lowerCamel(_ name: String) -> String {
        let parts = name.split(separator: "_").map(String.init)
        guard let first = parts.first else { return name }
        let head = first.prefix(1).lowercased() + first.dropFirst()
        return head + parts.dropFirst().map(capitalizedFirst).joined()
    }

    /// `outcome_list` becomes `OutcomeList`.
    public static func upperCamel(_ name: String) -> String {
        name.split(separator: "_").map { capitalizedFirst(String($0)) }.joined()
    }

    /// The item type of a list field: `lines` becomes `Line`, `findings` becomes `Finding`.
    public static func itemTypeName(forList name: String) -> String {
        let upper = upperCamel(name)
        if upper.count > 1, upper.hasSuffix("s"), !upper.hasSuffix("ss") {
            return String(upper.dropLast())
        }
        return upper + "Item"
    }

    /// A name written in Swift source: keywords are escaped with backticks.
    public static func escaped(_ identifier: String) -> String {
        swiftKeywords.contains(identifier) ? "`\(identifier)`" : identifier
    }

    static func capitalizedFirst(_ s: String) -> String {
        s.prefix(1).uppercased() + s.dropFirst()
    }

    static func isIdentifier(_ s: String, firstLowercase: Bool? = nil) -> Bool {
        guard let first = s.unicodeScalars.first, first.isASCIILetter else { return false }
        if let lower = firstLowercase, lower != first.isASCIILowercase { return false }
        return s.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" }
    }

    /// Swift's reserved words: a property with one of these names would not compile unescaped.
    public static let swiftKeywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import",
        "init", "inout", "internal", "let", "open", "operator", "private", "precedencegroup",
        "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var",
        "break", "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough",
        "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while", "Any",
        "as", "await", "false", "is", "nil", "self", "Self", "super", "throws", "true", "try",
        "Type", "Protocol", "some", "any", "consume", "copy", "discard", "each", "borrowing",
        "consuming", "nonisolated", "isolated", "sending", "async", "actor", "macro", "package",
    ]

    /// Member names the generated payload type defines itself.
    public static let reservedMembers: Set<String> = [
        "formName", "formVersion", "endpointTemplate", "lane", "endpoint", "validate",
        "placeholders", "remapped", "merge", "field", "CodingKeys", "Field", "encode",
        "recordType", "recordVersion", "scopeField", "indexedFields", "indexEntries", "recordBinding", "mappingFiles", "all", "withID",
    ]

    /// Type names the runtime already defines, which a form or nested type may not shadow.
    public static let reservedTypes: Set<String> = [
        "Money", "FileRef", "EntityRef", "GeoPoint", "LocalDate", "LocalTime", "Timestamp",
        "FieldError", "FieldValidator", "FormPayload", "FormField", "FormCatalog", "MergeResult", "FieldConflict",
        "ThreeWayMerge", "ConflictPolicy", "SyncRecord", "RecordQuery", "RecordIndexEntry", "RecordBinding", "Field", "CodingKeys",
        "String", "Int", "Bool",
        "Decimal", "Array", "Optional", "Codable", "Sendable", "Equatable", "Error", "Swift",
        "Foundation", "FormSyncModel", "FormSyncClient", "Int64", "Double", "Set", "Dictionary",
    ]
}

extension Unicode.Scalar {
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    var isASCIILowercase: Bool { ("a"..."z").contains(self) }
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
