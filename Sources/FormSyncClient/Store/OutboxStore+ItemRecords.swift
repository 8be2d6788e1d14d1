import FormSyncSQLite
import Foundation

extension OutboxStore {
    // MARK: Records a submission's lists create

    /// One record an item of a submission's list will create, under its placeholder.
    struct ItemRecord: Equatable {
        var placeholder: Int64
        var type: String
        var list: String
        var position: Int
    }

    /// The placeholders of the records `item`'s lists create, by list and position.
    func itemRecords(of item: Int64) throws -> [ItemRecord] {
        try db.query(
            "SELECT placeholder, type, list, position FROM item_records WHERE item_id = ? ORDER BY list, position", [.integer(item)]
        ) { ItemRecord(placeholder: $0.int(0), type: $0.text(1) ?? "", list: $0.text(2) ?? "", position: Int($0.int(3))) }
    }

    /// Makes `item`'s records of `list` exactly `count`: those at positions it keeps keep their
    /// placeholders, new positions take ones from `mint`, positions past `count` are dropped.
    /// Returns the placeholders dropped.
    @discardableResult
    func setItemRecords(item: Int64, list: String, type: String, count: Int, mint: () -> Int64) throws -> [Int64] {
        let held = try itemRecords(of: item).filter { $0.list == list }
        let dropped = held.filter { $0.position >= count }.map(\.placeholder)
        for placeholder in dropped { try db.run("DELETE FROM item_records WHERE placeholder = ?", [.integer(placeholder)]) }
        let kept = Set(held.filter { $0.position < count }.map(\.position))
        for position in 0..<count where !kept.contains(position) {
            try db.run(
                "INSERT INTO item_records (placeholder, item_id, type, list, position) VALUES (?, ?, ?, ?, ?)",
                [.integer(mint()), .integer(item), .text(type), .text(list), .integer(Int64(position))])
        }
        return dropped
    }

    /// Every placeholder `item` stands for: the record it creates and its lists' records.
    func producedPlaceholders(of row: Row) throws -> [Int64] {
        let lists = row.kind == .submission ? try itemRecords(of: row.id).map(\.placeholder) : []
        return (row.produces.map { [$0] } ?? []) + lists
    }
}
