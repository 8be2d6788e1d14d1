import FieldForms
import FormSpec
import FormSyncInterpreter
import FormSyncModel
import Foundation

/// The app update the demo ships mid-day: the next build's `SalesOrder` (one version past the
/// built one) renames `customer_reference` to `po_number` and adds a required `channel`, with
/// the upgrader that brings the built version's orders along. The next build runs it through the spec interpreter, as a
/// build compiled from the new spec would run its generated code (the differential test holds
/// the two to the same results).
package enum AppUpdate {
    /// The next build's `SalesOrder` version.
    package static let nextVersion = SalesOrder.formVersion + 1

    package static let salesOrderNext = """
        form: SalesOrder
        version: \(nextVersion)
        description: An order taken by a sales rep, for a customer that may itself be new and offline.
        endpoint: /customers/{customer_id}/orders
        entity: customer_id
        upgrades:
          \(nextVersion - 1): { rename: { customer_reference: po_number }, default: { channel: field } }
        fields:
          customer_id: { type: reference, to: Customer, required: true }
          order_date: { type: date, required: true }
          delivery_window: { type: choice, options: [morning, afternoon, evening] }
          payment_terms_days: { type: integer, min: 0, max: 90 }
          discount_percent: { type: decimal, min: 0, max: 30 }
          po_number: { type: text, max_length: 40, conflict: client }
          channel: { type: choice, options: [field, phone, web], required: true }
          credit_limit: { type: money, authority: server }
          lines:
            type: list
            min_count: 1
            max_count: 200
            required: true
            fields:
              sku: { type: text, required: true, pattern: "[A-Z0-9-]{4,20}" }
              quantity: { type: integer, required: true, min: 1, max: 10000 }
              unit_price: { type: money, required: true, min: 0 }
              note: { type: text, max_length: 200 }
              line_total: { type: money, calculate: quantity * unit_price }
          total: { type: money, calculate: sum(lines.line_total) }
          signed_by_customer: { type: signature, conflict: server }
        """

    /// The forms of the next build: every built-in form, with `SalesOrder` at `nextVersion`.
    package static func nextBuild() throws -> FormRegistry {
        let checked = SpecLoader.check(text: salesOrderNext, path: "SalesOrder.yaml")
        guard let form = checked.form else {
            throw AppUpdateError(
                message: "the demo's next SalesOrder does not check: \(checked.diagnostics.map(\.description).joined(separator: "; "))"
            )
        }
        let current = FormRegistry(FormCatalog.forms)
        var entries = current.names.filter { $0 != form.name }.compactMap { current[$0] }
        entries.append(SpecInterpreter.entry(for: form))
        return FormRegistry(entries: entries)
    }
}

/// The next build's spec does not check (a mistake in this file, caught by the demo's tests).
package struct AppUpdateError: Error, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}
