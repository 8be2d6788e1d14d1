import Foundation
import Testing

@testable import FormSpec

/// Records in the spec language, and the checks that only work across specs.
struct RecordSpecTests {
    /// Writes `files` into a fresh folder and checks them together.
    func checkTogether(_ files: [String: String]) throws -> (dir: String, results: [(path: String, spec: CheckedSpec)]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("records-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return (dir.path, SpecLoader.check(filesAt: SpecLoader.specFiles(in: [dir.path])))
    }

    let customer = """
        record: Customer
        version: 1
        scope: owner
        index: [segment]
        fields:
          owner: { type: text, required: true }
          name: { type: text, required: true }
          phone: text
          segment: { type: choice, options: [retail, wholesale] }
        """

    @Test func aRecordSpecBecomesARecordDefinitionWithScopeAndIndexes() throws {
        let spec = SpecLoader.check(text: customer, path: "Customer.yaml")
        #expect(spec.diagnostics.isEmpty)
        let record = try #require(spec.record)
        #expect(spec.form == nil)
        #expect(record.name == "Customer")
        #expect(record.scope == "owner")
        #expect(record.indexes == ["segment"])
        #expect(record.fields.map(\.name) == ["owner", "name", "phone", "segment"])
    }

    @Test func aReferenceToAnUndeclaredRecordIsAnErrorWithADidYouMean() throws {
        let (dir, results) = try checkTogether([
            "Customer.yaml": customer,
            "Order.yaml": "form: Order\nversion: 1\nendpoint: /orders\nfields:\n  customer: { type: reference, to: Custommer }\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let order = try #require(results.first { $0.path.hasSuffix("Order.yaml") })
        #expect(
            order.spec.diagnostics.map(\.description) == [
                "\(dir)/Order.yaml:5:36: error: reference 'customer' points to 'Custommer', which no record spec declares (did you mean 'Customer'?)"
            ])
        #expect(order.spec.form == nil)
    }

    @Test func formsMustLineUpWithTheRecordTheyCreateOrEdit() throws {
        let (dir, results) = try checkTogether([
            "Customer.yaml": customer,
            "NewCustomer.yaml": """
            form: NewCustomer
            version: 1
            endpoint: /customers
            creates: Customer
            fields:
              owner: { type: text, required: true }
              phone: integer
            """,
            "CustomerEdit.yaml": """
            form: CustomerEdit
            version: 1
            endpoint: /customers/{customer}
            entity: customer
            edits: Customer
            fields:
              customer: { type: reference, to: Customer, required: true }
              segment: { type: choice, options: [retail, horeca] }
              fax: text
            """,
            "Ghost.yaml": "form: Ghost\nversion: 1\nendpoint: /g\ncreates: Custmer\nfields:\n  a: text\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func messages(_ name: String) -> [String] {
            results.first { $0.path.hasSuffix("/" + name) }!.spec.diagnostics.map(\.description)
        }
        #expect(
            messages("NewCustomer.yaml") == [
                "\(dir)/NewCustomer.yaml:7:3: error: field 'phone' is an integer field here but a text field in record Customer (Customer.yaml); the shapes must match",
                "\(dir)/NewCustomer.yaml:4:10: error: record Customer requires 'name', which form NewCustomer does not have",
            ])
        #expect(
            messages("CustomerEdit.yaml") == [
                "\(dir)/CustomerEdit.yaml:8:3: error: field 'segment' is a choice of [retail, horeca] here but a choice of [retail, wholesale] in record Customer (Customer.yaml); the shapes must match",
                "\(dir)/CustomerEdit.yaml:9:3: error: field 'fax': CustomerEdit edits Customer, which has no field 'fax'",
            ])
        #expect(
            messages("Ghost.yaml") == [
                "\(dir)/Ghost.yaml:4:10: error: form Ghost creates 'Custmer', which no record spec declares (did you mean 'Customer'?)"
            ])
        #expect(messages("Customer.yaml").isEmpty)
    }

    @Test func aRecordAndAFormCannotShareAName() throws {
        let (dir, results) = try checkTogether([
            "A.yaml": customer,
            "B.yaml": "form: Customer\nversion: 1\nendpoint: /c\nfields:\n  a: text\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(
            results[1].spec.diagnostics.map(\.description) == [
                "\(dir)/B.yaml:1:7: error: form 'Customer' is already declared as a record in \(dir)/A.yaml"
            ])
    }

    @Test func aListThatCreatesRecordsMustLineUpWithItsRecord() throws {
        let defect = """
            record: Defect
            version: 1
            scope: owner
            fields:
              owner: { type: text, required: true }
              site: { type: text, required: true }
              title: { type: text, required: true }
              severity: { type: choice, options: [low, high], required: true }
              photo: photo
            """
        let (dir, results) = try checkTogether([
            "Defect.yaml": defect,
            "Audit.yaml": """
            form: Audit
            version: 1
            endpoint: /audits
            fields:
              site: { type: text, required: true }
              owner: text
              title: text
              defects:
                type: list
                creates: { record: Defect, form_fields: [site, owner, title, note] }
                fields:
                  title: text
                  severity: { type: choice, options: [low, medium, high], required: true }
              parts:
                type: list
                creates: Defet
                fields:
                  sku: text
              note: text
            """,
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let audit = try #require(results.first { $0.path.hasSuffix("Audit.yaml") })
        #expect(
            audit.spec.diagnostics.map(\.description) == [
                "\(dir)/Audit.yaml:10:24: error: field 'defects.severity' is a choice of [low, medium, high] here but a choice of [low, high] in record Defect (Defect.yaml); the shapes must match",
                "\(dir)/Audit.yaml:10:24: error: 'title' is both a field of each 'defects' item and a form field it copies; keep one",
                "\(dir)/Audit.yaml:10:24: error: 'form_fields' copies 'note' into Defect, which has no field 'note'",
                "\(dir)/Audit.yaml:10:24: error: field 'owner' must be required: each Defect made from 'defects' needs it",
                "\(dir)/Audit.yaml:10:24: error: field 'title' must be required: each Defect made from 'defects' needs it",
                "\(dir)/Audit.yaml:16:14: error: list 'parts' creates 'Defet', which no record spec declares (did you mean 'Defect'?)",
            ])
        #expect(audit.spec.form == nil)

        // Lined up: the checked form carries the list's record, the item fields it shares and
        // the form fields it copies.
        let (fine, checked) = try checkTogether([
            "Defect.yaml": defect,
            "Audit.yaml": """
            form: Audit
            version: 1
            endpoint: /audits
            fields:
              site: { type: text, required: true }
              owner: { type: text, required: true }
              defects:
                type: list
                creates: { record: Defect, form_fields: [site, owner] }
                fields:
                  title: { type: text, required: true }
                  severity: { type: choice, options: [high, low], required: true }
                  photo: photo
                  remark: text
            """,
        ])
        defer { try? FileManager.default.removeItem(atPath: fine) }
        #expect(checked.allSatisfy { $0.spec.diagnostics.isEmpty }, "\(checked.flatMap(\.spec.diagnostics))")
        let form = try #require(checked.first { $0.path.hasSuffix("Audit.yaml") }?.spec.form)
        let records = Dictionary(uniqueKeysWithValues: checked.compactMap(\.spec.record).map { ($0.name, $0) })
        let creations = form.listCreations(records: records)
        #expect(creations.map(\.list) == ["defects"] && creations.map(\.record) == ["Defect"])
        #expect(creations.first?.itemFields == ["title", "severity", "photo"] && creations.first?.formFields == ["site", "owner"])
    }

    @Test func aFormDeletesOnlyARecordWhoseSpecLetsDevicesDeleteIt() throws {
        let form = """
            form: Removal
            version: 1
            endpoint: /customers/{customer}/removals
            entity: customer
            deletes: Customer
            fields:
              customer: { type: reference, to: Customer, required: true }
              reason: text
            """
        let (dir, results) = try checkTogether(["Customer.yaml": customer, "Removal.yaml": form])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let removal = try #require(results.first { $0.path.hasSuffix("Removal.yaml") })
        #expect(
            removal.spec.diagnostics.map(\.description) == [
                "\(dir)/Removal.yaml:5:10: error: form Removal deletes Customer, whose spec does not let devices delete it; add 'device_deletes: true' to Customer.yaml if devices may"
            ])
        let (fine, checked) = try checkTogether(["Customer.yaml": customer + "\ndevice_deletes: true\n", "Removal.yaml": form])
        defer { try? FileManager.default.removeItem(atPath: fine) }
        #expect(checked.allSatisfy { $0.spec.diagnostics.isEmpty }, "\(checked.flatMap(\.spec.diagnostics))")
        #expect(checked.compactMap(\.spec.record).first?.deviceDeletes == true)
        #expect(checked.compactMap(\.spec.form).first?.binding?.action == .deletes)
    }

    @Test func theExampleSpecsCheckTogetherWithoutAProblem() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let results = SpecLoader.check(filesAt: SpecLoader.specFiles(in: [root.appendingPathComponent("FormSpecs").path]))
        #expect(results.allSatisfy { $0.spec.diagnostics.isEmpty })
        #expect(Set(results.compactMap(\.spec.record?.name)) == ["Customer", "Delivery", "Finding", "Job", "Site", "Technician"])
        #expect(results.first { $0.spec.form?.name == "CustomerUpdate" }?.spec.form?.binding?.action == .edits)
    }
}
