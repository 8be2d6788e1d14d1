import CYAML

@testable import FormSpec

/// libyaml's parser as a `YAMLEventSource`: the oracle the Swift reader is held against. It lives
/// in the tests only; nothing on the build path links libyaml.
final class LibYAMLEvents: YAMLEventSource {
    private var parser = yaml_parser_t()
    private let input: UnsafeMutableBufferPointer<UInt8>

    init(_ text: String) {
        let bytes = Array(text.utf8)
        input = .allocate(capacity: max(bytes.count, 1))
        _ = input.initialize(from: bytes)
        _ = yaml_parser_initialize(&parser)
        yaml_parser_set_input_string(&parser, input.baseAddress, bytes.count)
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
    }

    deinit {
        yaml_parser_delete(&parser)
        input.deallocate()
    }

    func next() -> Result<YAMLEvent, YAMLSyntaxError> {
        var raw = yaml_event_t()
        guard yaml_parser_parse(&parser, &raw) == 1 else {
            let mark = parser.problem_mark
            return .failure(
                YAMLSyntaxError(
                    problem: parser.problem.map { String(cString: $0) } ?? "malformed YAML",
                    context: parser.context.map { String(cString: $0) },
                    mark: YAMLMark(index: mark.index, line: mark.line, column: mark.column)))
        }
        defer { yaml_event_delete(&raw) }
        let start = YAMLMark(index: raw.start_mark.index, line: raw.start_mark.line, column: raw.start_mark.column)
        switch raw.type {
        case YAML_STREAM_START_EVENT: return .success(YAMLEvent(kind: .streamStart, start: start))
        case YAML_STREAM_END_EVENT: return .success(YAMLEvent(kind: .streamEnd, start: start))
        case YAML_DOCUMENT_START_EVENT: return .success(YAMLEvent(kind: .documentStart, start: start))
        case YAML_DOCUMENT_END_EVENT: return .success(YAMLEvent(kind: .documentEnd, start: start))
        case YAML_ALIAS_EVENT:
            let name = String(cString: raw.data.alias.anchor)
            return .success(YAMLEvent(kind: .alias, start: start, value: name))
        case YAML_SCALAR_EVENT:
            let scalar = raw.data.scalar
            let value = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            let style: YAMLScalarStyle
            switch scalar.style {
            case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
            case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
            case YAML_LITERAL_SCALAR_STYLE: style = .literal
            case YAML_FOLDED_SCALAR_STYLE: style = .folded
            default: style = .plain
            }
            return .success(
                YAMLEvent(
                    kind: .scalar, start: start, value: value, style: style, hasAnchor: scalar.anchor != nil, hasTag: scalar.tag != nil))
        case YAML_SEQUENCE_START_EVENT:
            let data = raw.data.sequence_start
            return .success(YAMLEvent(kind: .sequenceStart, start: start, hasAnchor: data.anchor != nil, hasTag: data.tag != nil))
        case YAML_SEQUENCE_END_EVENT: return .success(YAMLEvent(kind: .sequenceEnd, start: start))
        case YAML_MAPPING_START_EVENT:
            let data = raw.data.mapping_start
            return .success(YAMLEvent(kind: .mappingStart, start: start, hasAnchor: data.anchor != nil, hasTag: data.tag != nil))
        case YAML_MAPPING_END_EVENT: return .success(YAMLEvent(kind: .mappingEnd, start: start))
        default:
            return .failure(YAMLSyntaxError(problem: "no event", context: nil, mark: start))
        }
    }
}
