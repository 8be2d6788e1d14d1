import Foundation

extension Data {
    /// A copy with every non-overlapping occurrence of `target` replaced by `replacement`.
    func replacing(_ target: Data, with replacement: Data) -> Data {
        guard !target.isEmpty, count >= target.count else { return self }
        var result = Data(capacity: count)
        var index = startIndex
        while let found = self[index...].firstRange(of: target) {
            result.append(self[index..<found.lowerBound])
            result.append(replacement)
            index = found.upperBound
        }
        result.append(self[index...])
        return result
    }
}
