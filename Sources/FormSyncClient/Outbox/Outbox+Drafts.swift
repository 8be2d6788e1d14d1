import FormSyncModel
import Foundation

extension Outbox {
    // MARK: Drafts

    /// A form half filled, kept in the outbox's database until it is submitted or discarded.
    public struct Draft<P: FormPayload>: Sendable {
        public var id: DraftID
        /// What was saved last, complete or not (brought to the form's current version when it
        /// was saved under an older one).
        public var payload: P
        /// The document the submitted draft will be: the same at every save and at submit.
        public var documentID: String
        /// The files attached so far, by their placeholders.
        public var attachments: [DraftAttachment]
        public var updatedAt: Date
    }

    /// A file attached to a draft: its durable copy in the outbox's stash.
    public struct DraftAttachment: Sendable, Equatable {
        public var placeholder: Int64
        public var contentType: String?
        public var byteCount: Int64
        /// Where the copy is (read it to show the photo again).
        public var path: String
    }

    /// One draft in a list: what it is and when it was saved last.
    public struct DraftSummary: Sendable, Equatable, Identifiable {
        public var id: DraftID
        public var form: String
        public var formVersion: Int
        public var documentID: String
        public var attachments: Int
        public var updatedAt: Date
    }

    /// The view drafts are kept in: the workspace and, on a shared phone, the person.
    private var draftView: String { PersonalView(workspace: workspace, principal: lifecycle.principal).key }

    /// Saves `payload` as draft `id` (a new draft when nil), complete or not: nothing is
    /// validated, nothing is sent. Cheap enough to call on every change of a form: it commits
    /// without waiting for the disk's flush, so a process killed at any moment keeps every save
    /// that returned (a power cut may lose the last ones; files attached are flushed when
    /// attached). Returns the draft's id.
    ///
    /// `documentID` names the document the draft will be submitted as (an app that minted one
    /// for the job, so that a retried capture is the same document); it is taken at the first
    /// save and a different one later is refused. Nil mints one.
    @discardableResult
    public func saveDraft<P: FormPayload>(_ payload: P, id: DraftID? = nil, documentID: String? = nil) throws -> DraftID {
        guard registry[P.formName] != nil else { throw OutboxError.unknownForm(P.formName) }
        let json = try PreparedPayload.encode(payload)
        let now = environment.now()
        let view = draftView
        let draftID = id ?? DraftID(rawValue: environment.newID())
        try write(.normal) {
            let held = try store.draft(draftID.rawValue)
            if let held, held.view != view || held.form != P.formName { throw OutboxError.noSuchDraft(draftID.rawValue) }
            if let held, let documentID, documentID != held.documentID {
                throw OutboxError.draftIsAnotherDocument(draft: draftID.rawValue, document: held.documentID, named: documentID)
            }
            // The document is named at the first save and kept by every later one.
            try store.saveDraft(
                OutboxStore.DraftRow(
                    id: draftID.rawValue, view: view, form: P.formName, formVersion: P.formVersion,
                    documentID: held?.documentID ?? documentID ?? environment.newID(), payload: json, createdAt: held?.createdAt ?? now,
                    updatedAt: now))
        }
        CrashPoint.draftSaved.reach()
        return draftID
    }

    /// Copies `source` into the stash as the file of `placeholder` in draft `id` (replacing one
    /// attached before under it), durably: once this returns, the photo survives the app being
    /// killed and the power failing.
    public func attach(_ source: URL, to id: DraftID, placeholder: Int64, contentType: String? = nil) throws {
        let view = draftView
        guard let held = try storage({ try store.draft(id.rawValue) }), held.view == view else {
            throw OutboxError.noSuchDraft(id.rawValue)
        }
        let copy = try stash.store(source, name: "draft-\(environment.newID())")
        CrashPoint.draftAttached.reach()
        let replaced = try storage { try store.draftFiles(draft: id.rawValue).first { $0.placeholder == placeholder }?.path }
        do {
            try write(.full) {
                try store.addDraftFile(
                    draft: id.rawValue,
                    OutboxStore.DraftFile(
                        placeholder: placeholder, path: copy.path, contentType: contentType, byteCount: copy.byteCount, sha256: copy.sha256)
                )
            }
        } catch {
            stash.remove(copy.path)
            throw error
        }
        if let replaced, replaced != copy.path { stash.remove(replaced) }
    }

    /// The current person's drafts, the most recently saved first.
    public func drafts() throws -> [DraftSummary] {
        let view = draftView
        return try storage {
            try store.drafts(view: view).map { row in
                DraftSummary(
                    id: DraftID(rawValue: row.id), form: row.form, formVersion: row.formVersion, documentID: row.documentID,
                    attachments: try store.draftFiles(draft: row.id).count, updatedAt: Date(millisecondsSince1970: row.updatedAt))
            }
        }
    }

    /// Draft `id` as `P`, brought to the form's current version by the spec's upgraders when it
    /// was saved under an older one; nil when there is no such draft of the current person.
    public func draft<P: FormPayload>(_ id: DraftID, as type: P.Type) throws -> Draft<P>? {
        let view = draftView
        guard let row = try storage({ try store.draft(id.rawValue) }), row.view == view else { return nil }
        guard row.form == P.formName else { throw OutboxError.formMismatch(expected: row.form, got: P.formName) }
        var json = row.payload
        if row.formVersion < P.formVersion, let entry = registry[row.form] {
            json = try entry.upgrade(json, from: row.formVersion)
        }
        let payload = try JSONDecoder().decode(P.self, from: json)
        let files = try storage { try store.draftFiles(draft: id.rawValue) }
        return Draft(
            id: id, payload: payload, documentID: row.documentID,
            attachments: files.map {
                DraftAttachment(placeholder: $0.placeholder, contentType: $0.contentType, byteCount: $0.byteCount, path: $0.path)
            }, updatedAt: Date(millisecondsSince1970: row.updatedAt))
    }

    /// Removes draft `id` and its files' copies.
    public func discardDraft(_ id: DraftID) throws {
        let view = draftView
        let paths = try write(.full) { () throws -> [String] in
            guard let row = try store.draft(id.rawValue), row.view == view else { throw OutboxError.noSuchDraft(id.rawValue) }
            let paths = try store.draftFiles(draft: id.rawValue).map(\.path)
            try store.deleteDraft(id.rawValue)
            return paths
        }
        for path in paths { stash.remove(path) }
    }

    /// Submits draft `id`: its payload (as saved, with `finish` applied) is validated and
    /// enqueued with its attached files, as the document the draft has been all along, and the
    /// draft goes. Field errors come back before anything is queued, and the draft stays. A
    /// process killed between the two finds both the item and the draft: submitting the draft
    /// again returns that item (an identical payload of the same document is queued once).
    @discardableResult
    public func submitDraft<P: FormPayload>(
        _ id: DraftID, as type: P.Type, creates: Int64? = nil, finish: (inout P) -> Void = { _ in }
    )
        async throws -> ItemID
    {
        guard var draft = try draft(id, as: P.self) else { throw OutboxError.noSuchDraft(id.rawValue) }
        finish(&draft.payload)
        let attachments = draft.attachments.map {
            Attachment(placeholder: $0.placeholder, source: URL(fileURLWithPath: $0.path), contentType: $0.contentType)
        }
        let item = try await save(draft.payload, attachments: attachments, documentID: draft.documentID, creates: creates)
        CrashPoint.draftSubmitted.reach()
        try discardDraft(id)
        return ItemID(item)
    }
}

/// A draft's identity: minted by the outbox, or chosen by the app (one draft per screen, say).
public struct DraftID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
}
