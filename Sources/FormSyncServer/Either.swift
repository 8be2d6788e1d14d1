/// One of two values (`Result` without its `Error` constraint).
enum Either<First, Second> {
    case first(First)
    case second(Second)
}
