import FormSpec
import FormSyncCodegen

/// The script library of `formsync preview`'s pages: what `Formula` and `FieldValidator` are to
/// the generated Swift, the operations each form's generated script calls. It follows the Swift
/// step for step — integers of 64 bits whose overflow is unknown, decimals of 38 digits in a
/// 128-bit significand, money in minor units, texts by Unicode scalars — and the browser test
/// holds the two to the same verdicts.
public enum PreviewRuntime {
    /// The library, served as `/formsync.js`.
    public static let script = logic + page

    /// The operations: values, arithmetic, comparisons, logic, the validator.
    static let logic = #"""
        "use strict";
        const FS = (() => {
          const I64_MIN = -(2n ** 63n), I64_MAX = 2n ** 63n - 1n;
          const I128_MIN = -(2n ** 127n), I128_MAX = 2n ** 127n - 1n;
          const LIMIT = 10n ** 38n;
          const PLACES = 10;
          const known = (v) => v !== null && v !== undefined;
          const MEDIA_ALIASES = \#(MediaTypeAliases.javaScript);
          const int = (v) => (known(v) && v >= I64_MIN && v <= I64_MAX ? v : null);
          const fits128 = (v) => v >= I128_MIN && v <= I128_MAX;

          // Decimals: { s: BigInt significand, e: power of ten }, normalized as ExactDecimal.
          function dec(s, e) {
            if (s === 0n) return { s: 0n, e: 0 };
            while (s % 10n === 0n) { s /= 10n; e += 1; }
            if (s <= -LIMIT || s >= LIMIT || Math.abs(e) > 200) return null;
            return { s, e };
          }
          function decOf(text) {
            if (!known(text)) return null;
            const m = /^(-?)([0-9]+)(?:\.([0-9]+))?$/.exec(String(text).trim());
            if (!m) return null;
            const digits = (m[2] + (m[3] || "")).replace(/^0+/, "") || "0";
            const s = BigInt(digits);
            if (s >= LIMIT) return null;
            return dec(m[1] === "-" ? -s : s, -((m[3] || "").length));
          }
          function decText(d) {
            if (!known(d)) return null;
            const negative = d.s < 0n;
            let digits = (negative ? -d.s : d.s).toString();
            if (d.e >= 0) { if (d.s !== 0n) digits += "0".repeat(d.e); }
            else {
              const places = -d.e;
              if (digits.length <= places) digits = "0".repeat(places - digits.length + 1) + digits;
              digits = digits.slice(0, digits.length - places) + "." + digits.slice(digits.length - places);
            }
            return (negative ? "-" : "") + digits;
          }
          function scaled(v, power) {
            let r = v;
            for (let i = 0; i < power; i++) { r *= 10n; if (!fits128(r)) return null; if (r === 0n) break; }
            return r;
          }
          function aligned(a, b) {
            const e = Math.min(a.e, b.e);
            const x = scaled(a.s, a.e - e), y = scaled(b.s, b.e - e);
            return x === null || y === null ? null : [x, y, e];
          }
          function addDec(a, b) {
            if (!known(a) || !known(b)) return null;
            const al = aligned(a, b); if (!al) return null;
            const sum = al[0] + al[1]; if (!fits128(sum)) return null;
            return dec(sum, al[2]);
          }
          const negDec = (a) => (known(a) ? { s: -a.s, e: a.s === 0n ? 0 : a.e } : null);
          const subDec = (a, b) => addDec(a, negDec(b));
          function mulDec(a, b) {
            if (!known(a) || !known(b)) return null;
            const p = a.s * b.s; if (!fits128(p)) return null;
            return dec(p, a.e + b.e);
          }
          function divDec(a, b) {
            if (!known(a) || !known(b) || b.s === 0n) return null;
            const k = a.e - b.e + PLACES;
            let n = a.s, d = b.s;
            if (k >= 0) { n = scaled(n, k); if (n === null) return null; }
            else { d = scaled(d, -k); if (d === null) return null; }
            if (d < 0n) { if (n === I128_MIN || d === I128_MIN) return null; n = -n; d = -d; }
            let q = n / d;
            const r = (n % d) < 0n ? -(n % d) : n % d;
            const rest = d - r;
            if (r > rest || (r === rest && q % 2n !== 0n)) q += n < 0n ? -1n : 1n;
            return dec(q, -PLACES);
          }
          function cmpDec(a, b) {
            if (!known(a) || !known(b)) return null;
            const lt = (x, y) => {
              if ((x.s < 0n) !== (y.s < 0n)) return x.s < 0n;
              const al = aligned(x, y);
              if (!al) { const larger = x.e > y.e; return x.s < 0n ? larger : !larger; }
              return al[0] < al[1];
            };
            return lt(a, b) ? -1 : lt(b, a) ? 1 : 0;
          }
          const decOfInt = (i) => (known(i) ? dec(i, 0) : null);

          // Integers (BigInt within 64 bits).
          const addInt = (a, b) => (known(a) && known(b) ? int(a + b) : null);
          const subInt = (a, b) => (known(a) && known(b) ? int(a - b) : null);
          const mulInt = (a, b) => (known(a) && known(b) ? int(a * b) : null);
          const negInt = (a) => (known(a) ? int(-a) : null);
          const cmpOrd = (a, b) => (!known(a) || !known(b) ? null : a < b ? -1 : a > b ? 1 : 0);

          // Money: { minor_units: BigInt, currency }.
          const money = (m, u) => (known(u) && u >= I64_MIN && u <= I64_MAX ? { minor_units: u, currency: m.currency } : null);
          const addMoney = (a, b) => (known(a) && known(b) && a.currency === b.currency ? money(a, a.minor_units + b.minor_units) : null);
          const negMoney = (a) => (known(a) ? money(a, -a.minor_units) : null);
          const subMoney = (a, b) => addMoney(a, negMoney(b));
          const mulMoney = (m, n) => (known(m) && known(n) ? money(m, m.minor_units * n) : null);
          const cmpMoney = (a, b) => (known(a) && known(b) && a.currency === b.currency ? cmpOrd(a.minor_units, b.minor_units) : null);

          // Texts by Unicode scalars; times in seconds; moments in milliseconds.
          function cmpText(a, b) {
            if (!known(a) || !known(b)) return null;
            const x = [...a], y = [...b];
            for (let i = 0; i < Math.min(x.length, y.length); i++) {
              const c = x[i].codePointAt(0) - y[i].codePointAt(0);
              if (c !== 0) return c < 0 ? -1 : 1;
            }
            return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
          }
          const cmpBool = (a, b) => (known(a) && known(b) ? (a === b ? 0 : -1) : null);
          function seconds(t) {
            if (!known(t)) return null;
            const m = /^([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?$/.exec(t);
            return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] || 0) : null;
          }
          const moment = (t) => (known(t) && !Number.isNaN(Date.parse(t)) ? Date.parse(t) : null);
          const cmpTime = (a, b) => cmpOrd(seconds(a), seconds(b));
          const cmpMoment = (a, b) => cmpOrd(moment(a), moment(b));
          const cmpDate = (a, b) => cmpOrd(a, b);

          function holds(order, op) {
            if (order === null) return null;
            switch (op) {
              case "=": return order === 0;
              case "!=": return order !== 0;
              case "<": return order < 0;
              case "<=": return order <= 0;
              case ">": return order > 0;
              default: return order >= 0;
            }
          }
          function and(a, b) {
            if (a === false) return false;
            const y = b();
            if (y === false) return false;
            return a === null || y === null ? null : true;
          }
          function or(a, b) {
            if (a === true) return true;
            const y = b();
            if (y === true) return true;
            return a === null || y === null ? null : false;
          }
          const not = (a) => (a === null ? null : !a);
          const length = (t) => (known(t) ? BigInt([...t].length) : null);
          const selected = (values, v) => (known(v) ? (values || []).includes(v) : null);
          const choose = (c, a, b) => (c === null ? null : c ? a() : b());
          function fold(values, combine) {
            let result = null;
            for (const v of values) {
              if (!known(v)) continue;
              if (result === null) { result = v; continue; }
              const next = combine(result, v);
              if (next === null) return null;
              result = next;
            }
            return result;
          }
          const pick = (cmp, want) => (a, b) => { const o = cmp(a, b); return o === null ? null : o === want ? b : a; };

          // The clock `today()` and `now()` read: the browser's, unless a test stops it.
          const clock = { today: null, now: null };
          function today() {
            if (clock.today) return clock.today;
            const d = new Date();
            const p = (n) => String(n).padStart(2, "0");
            return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
          }
          function now() {
            return clock.now || new Date().toISOString();
          }

          // The validator: FieldValidator's rules, in its words and codes.
          class Validator {
            constructor() { this.errors = []; }
            fail(pointer, code, detail) { this.errors.push({ pointer, code, detail }); }
            require(v, p) {
              const missing = !known(v) || (typeof v === "string" && /^\s*$/.test(v)) || (Array.isArray(v) && v.length === 0);
              if (missing) this.fail(p, "required", "This field is required.");
            }
            length(v, min, max, p) {
              if (!known(v)) return;
              const n = [...v].length;
              if (min !== null && n < min) this.fail(p, "min_length", `Must be at least ${min} characters long.`);
              if (max !== null && n > max) this.fail(p, "max_length", `Must be at most ${max} characters long.`);
            }
            pattern(v, re, p) {
              if (!known(v) || v === "") return;
              if (!re.test(v)) this.fail(p, "pattern", "Does not have the expected format.");
            }
            rangeInt(v, min, max, p) {
              if (!known(v)) return;
              if (min !== null && v < min) this.fail(p, "min", `Must be at least ${min}.`);
              if (max !== null && v > max) this.fail(p, "max", `Must be at most ${max}.`);
            }
            rangeDec(v, min, max, p) {
              const d = decOf(v);
              if (!known(d)) return;
              if (min !== null && cmpDec(d, decOf(min)) < 0) this.fail(p, "min", `Must be at least ${min}.`);
              if (max !== null && cmpDec(d, decOf(max)) > 0) this.fail(p, "max", `Must be at most ${max}.`);
            }
            money(v, min, max, currency, p) {
              if (!known(v)) return;
              if (!/^[A-Z]{3}$/.test(v.currency)) this.fail(p, "currency", `'${v.currency}' is not an ISO 4217 currency code.`);
              else if (currency !== null && v.currency !== currency) this.fail(p, "currency", `Must be in ${currency}.`);
              if (min !== null && v.minor_units < min) this.fail(p, "min", `Must be at least ${min} minor units.`);
              if (max !== null && v.minor_units > max) this.fail(p, "max", `Must be at most ${max} minor units.`);
            }
            count(n, min, max, p) {
              if (min !== null && n < min) this.fail(p, "min_count", `Needs at least ${min} item${min === 1 ? "" : "s"}.`);
              if (max !== null && n > max) this.fail(p, "max_count", `Takes at most ${max} item${max === 1 ? "" : "s"}.`);
            }
            unique(values, p) {
              if (new Set(values).size !== values.length) this.fail(p, "unique", "Each option may be chosen only once.");
            }
            file(ref, maxBytes, types, p) {
              if (!known(ref)) return;
              const size = known(ref.byte_count) ? ref.byte_count : null;
              if (maxBytes !== null && size !== null && size > maxBytes) this.fail(p, "max_bytes", `The file is ${size} bytes; the limit is ${maxBytes}.`);
              const type = known(ref.content_type) ? ref.content_type.toLowerCase() : null;
              const canonical = (t) => { const bare = t.split(";")[0].trim().toLowerCase(); return MEDIA_ALIASES[bare] ?? bare; };
              const matches = (t) => { const a = canonical(t), d = canonical(type); return a === "*/*" || (a.endsWith("/*") ? d.startsWith(a.slice(0, -1)) : d === a); };
              if (types.length > 0 && type !== null && !types.some(matches)) {
                this.fail(p, "content_type", `Files of type ${type} are not accepted here.`);
              }
              if (size !== null && size < 0n) this.fail(p, "invalid", "A file's size cannot be negative.");
              if (known(ref.digest)) {
                if (!/^sha-256=:[A-Za-z0-9+/]{43}=:$/.test(ref.digest)) this.fail(p, "invalid", "The digest must be sha-256=:<base64>: of 32 bytes.");
                if (ref.id === 0n && (size === null || type === null)) this.fail(p, "invalid", "A pending file needs its byte_count and content_type.");
              } else if (ref.id === 0n) this.fail(p, "invalid", "The file reference is empty.");
            }
            reference(ref, p) {
              if (known(ref) && ref === 0n) this.fail(p, "invalid", "The reference is empty.");
            }
            geopoint(g, p) {
              if (!known(g)) return;
              const n = (x) => (known(x) ? Number(x) : null);
              const lat = n(g.latitude), lon = n(g.longitude), acc = n(g.accuracy);
              if (!(Number.isFinite(lat) && lat >= -90 && lat <= 90)) this.fail(p + "/latitude", "range", "Latitude must be between -90 and 90.");
              if (!(Number.isFinite(lon) && lon >= -180 && lon <= 180)) this.fail(p + "/longitude", "range", "Longitude must be between -180 and 180.");
              if (acc !== null && !(Number.isFinite(acc) && acc >= 0)) this.fail(p + "/accuracy", "range", "Accuracy must be 0 or more metres.");
            }
            notRelevant(holds, p) {
              if (holds) this.fail(p, "not_relevant", "This field does not apply here; leave it empty.");
            }
            constraint(verdict, holds, message, p) {
              if (holds && verdict === false) this.fail(p, "constraint", message);
            }
            calculated(value, expected, same, p) {
              if (!known(value) || (known(expected) && same(value, expected))) return;
              this.fail(p, "calculated", "Must be the value its calculation gives.");
            }
            offered(verdict, value, p) {
              if (verdict !== true) this.fail(p, "not_offered", `'${value}' is not offered here.`);
            }
          }
          const at = (pointer, token) => pointer + "/" + String(token).replace(/~/g, "~0").replace(/\//g, "~1");
          const holdsValue = (v) => known(v) && !(Array.isArray(v) && v.length === 0);

          return {
            known, dec, decOf, decText, decOfInt, addDec, subDec, mulDec, divDec, negDec, cmpDec,
            addInt, subInt, mulInt, negInt, cmpOrd, addMoney, subMoney, negMoney, mulMoney, cmpMoney,
            cmpText, cmpBool, cmpTime, cmpMoment, cmpDate, holds, and, or, not, length, selected, choose,
            sumInt: (v) => fold(v, addInt), sumDec: (v) => fold(v, addDec), sumMoney: (v) => fold(v, addMoney),
            minOf: (v, cmp) => fold(v, pick(cmp, 1)), maxOf: (v, cmp) => fold(v, pick(cmp, -1)),
            clock, today, now, Validator, at, holdsValue,
            lit: (t) => decOf(t),
            stored: (v) => (v === null ? undefined : v),
            levelOf(root, names) {
              let level = root;
              for (const name of names) level = level.fields.find((f) => f.name === name).item();
              return level;
            },
            offer(filter, field, value, h, p) {
              const option = field.options.find((o) => o.value === value);
              return option ? filter(option, h, p) : null;
            },
            define(form) { FS.form = form; },
          };
        })();
        """#

    /// The page: widgets for each field, read into a payload, settled, validated and shown as
    /// the author types; `FS.load` and `FS.verdict` let a test drive the same widgets.
    static let page = #"""
        (() => {
          const known = FS.known;
          let placeholder = 0;
          const el = (tag, attrs = {}, ...children) => {
            const e = document.createElement(tag);
            for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
            for (const c of children) e.append(c);
            return e;
          };
          const big = (t) => (/^-?[0-9]+$/.test(t.trim()) ? BigInt(t.trim()) : t.trim() === "" ? undefined : t);
          const text = (v) => (known(v) ? String(v) : "");
          // Money is typed and shown in major units of its currency (ISO 4217's digits); in a
          // currency the table does not know, in minor units.
          const DIGITS = \#(currencyDigits);
          const majorText = (units, digits) => {
            if (digits === 0) return String(units);
            const negative = units < 0n;
            const s = (negative ? -units : units).toString().padStart(digits + 1, "0");
            return (negative ? "-" : "") + s.slice(0, -digits) + "." + s.slice(-digits);
          };
          const minorOf = (t, digits) => {
            const m = /^(-?)([0-9]+)(?:\.([0-9]*))?$/.exec(t.trim());
            if (!m || (m[3] ?? "").length > digits) return null;
            return BigInt(m[1] + m[2] + (m[3] ?? "").padEnd(digits, "0"));
          };

          // One widget per field kind: its element, how it reads, how it is filled.
          function widget(field, level) {
            const input = (type = "text", extra = {}) => el("input", Object.assign({ type, "data-field": field.name }, extra));
            switch (field.kind) {
              case "text": case "datetime": case "decimal": {
                const i = input("text", field.kind === "decimal" ? { inputmode: "decimal" } : {});
                return { node: i, read: () => (i.value === "" ? undefined : i.value), load: (v) => { i.value = text(v); } };
              }
              case "integer": case "reference": {
                const i = input("text", { inputmode: "numeric" });
                return { node: i, read: () => big(i.value), load: (v) => { i.value = text(v); } };
              }
              case "date": case "time": {
                const i = input(field.kind, field.kind === "time" ? { step: "1" } : {});
                return { node: i, read: () => (i.value === "" ? undefined : i.value), load: (v) => { i.value = text(v); } };
              }
              case "boolean": {
                const s = el("select", { "data-field": field.name }, el("option", { value: "" }, "—"), el("option", { value: "true" }, "yes"), el("option", { value: "false" }, "no"));
                return { node: s, read: () => (s.value === "" ? undefined : s.value === "true"), load: (v) => { s.value = known(v) ? String(v) : ""; } };
              }
              case "choice": {
                const s = el("select", { "data-field": field.name }, el("option", { value: "" }, "—"), ...field.options.map((o) => el("option", { value: o.value }, o.value)));
                return { node: s, read: () => (s.value === "" ? undefined : s.value), load: (v) => { s.value = text(v); }, options: s };
              }
              case "multi_choice": {
                const box = el("span", { class: "multi", "data-field": field.name });
                let chosen = [];
                const boxes = field.options.map((o) => {
                  const c = el("input", { type: "checkbox", value: o.value });
                  c.addEventListener("change", () => { chosen = c.checked ? chosen.concat([o.value]) : chosen.filter((x) => x !== o.value); });
                  box.append(el("label", {}, c, o.value));
                  return c;
                });
                const sync = () => boxes.forEach((c) => { c.checked = chosen.includes(c.value); });
                return { node: box, read: () => chosen.slice(), load: (v) => { chosen = Array.isArray(v) ? v.slice() : []; sync(); }, options: box };
              }
              case "money": {
                const u = input("text", { inputmode: "decimal" });
                const c = input("text", { placeholder: field.currency || "EUR", size: "4" });
                const node = el("span", {}, u, c);
                const hint = () => {
                  const d = DIGITS[c.value.trim() || field.currency || "EUR"];
                  u.placeholder = d === undefined ? "minor units" : d === 0 ? "amount" : "0." + "0".repeat(d);
                };
                c.addEventListener("input", hint);
                hint();
                // What `load` showed and the value it stood for: read unedited, it is that value.
                let loaded = null;
                return {
                  node,
                  read: () => {
                    if (loaded && u.value === loaded.u && c.value === loaded.c) return loaded.v;
                    if (u.value === "" && c.value === "") return undefined;
                    const d = DIGITS[c.value];
                    // An amount with more decimals than its currency is kept as typed: the checks refuse it.
                    return { minor_units: d === undefined ? big(u.value) : (minorOf(u.value, d) ?? u.value.trim()), currency: c.value };
                  },
                  load: (v) => {
                    const d = known(v) ? DIGITS[v.currency] : undefined;
                    u.value = !known(v) ? "" : d !== undefined && typeof v.minor_units === "bigint" ? majorText(v.minor_units, d) : text(v.minor_units);
                    c.value = known(v) ? v.currency : "";
                    loaded = { u: u.value, c: c.value, v };
                    hint();
                  },
                };
              }
              case "geopoint": {
                const [a, b, c] = ["latitude", "longitude", "accuracy"].map((n) => input("text", { placeholder: n, size: "9" }));
                return {
                  node: el("span", {}, a, b, c),
                  read: () => {
                    if (a.value === "" && b.value === "") return undefined;
                    const g = { latitude: a.value, longitude: b.value };
                    if (c.value !== "") g.accuracy = c.value;
                    return g;
                  },
                  load: (v) => { a.value = known(v) ? text(v.latitude) : ""; b.value = known(v) ? text(v.longitude) : ""; c.value = known(v) ? text(v.accuracy) : ""; },
                };
              }
              case "list": {
                const items = el("div", { class: "items", "data-field": field.name });
                const rows = [];
                const add = (value) => {
                  const item = field.item();
                  const box = el("fieldset", { class: "item" });
                  const form = fieldsOf(item, box);
                  const remove = el("button", { type: "button" }, "remove");
                  const row = { box, form };
                  remove.addEventListener("click", () => { rows.splice(rows.indexOf(row), 1); box.remove(); FS.update(); });
                  box.append(remove);
                  items.append(box);
                  rows.push(row);
                  if (value) form.load(value);
                };
                const more = el("button", { type: "button" }, "add " + field.name);
                more.addEventListener("click", () => { add(null); FS.update(); });
                return {
                  node: el("div", {}, items, more),
                  read: () => rows.map((r) => r.form.read()),
                  load: (v) => { rows.splice(0).forEach((r) => r.box.remove()); (Array.isArray(v) ? v : []).forEach(add); },
                  rows,
                };
              }
              default: {
                // Files: a picker; the payload holds a placeholder id with the file's size and type.
                const multiple = !!field.multiple;
                const picker = input("file", { accept: field.accept, multiple: multiple ? "" : undefined });
                const shown = el("span", { class: "files" });
                let value = multiple ? [] : undefined;
                const show = () => {
                  const list = multiple ? value : known(value) ? [value] : [];
                  shown.textContent = list.length === 0 ? "" : list.length + " file(s), " + list.map((f) => (known(f.byte_count) ? f.byte_count : "?") + " bytes").join(", ");
                };
                picker.addEventListener("change", () => {
                  const refs = [...picker.files].map((f) => ({ id: BigInt(--placeholder), byte_count: BigInt(f.size), content_type: f.type || "application/octet-stream" }));
                  value = multiple ? refs : refs[0];
                  show();
                  FS.update();
                });
                return { node: el("span", {}, picker, shown), read: () => value, load: (v) => { value = multiple ? (Array.isArray(v) ? v : []) : v; show(); } };
              }
            }
          }

          // The fields of one level drawn into `box`; `read` gives its object, `load` fills it.
          function fieldsOf(level, box) {
            const widgets = level.fields.map((field) => {
              const w = widget(field, level);
              const label = el("label", { class: "name" }, field.name + (field.required ? " *" : ""));
              const note = el("span", { class: "note" }, [field.label || "", field.calculated ? "calculated" : "", field.relevantText ? "when " + field.relevantText : ""].filter((x) => x).join("; "));
              const row = el("div", { class: "field", "data-name": field.name }, label, w.node, note);
              if (field.label) row.title = field.label;
              if (field.calculated) [w.node, ...w.node.querySelectorAll("input, select")].forEach((n) => { if (n.tagName === "INPUT") n.readOnly = true; if (n.tagName === "SELECT") n.disabled = true; });
              box.append(row);
              return { field, w, row };
            });
            return {
              widgets,
              read() {
                const o = {};
                for (const { field, w } of widgets) { const v = w.read(); if (known(v) && !(Array.isArray(v) && v.length === 0 && field.kind !== "list" && field.kind !== "multi_choice")) o[field.name] = v; }
                return o;
              },
              load(object) { for (const { field, w } of widgets) w.load(FS.fromJSON(field, object ? object[field.name] : undefined)); },
            };
          }

          // Payload values from JSON (numbers as the field's type) and back.
          FS.fromJSON = function (field, v) {
            if (!known(v)) return undefined;
            const b = (x) => (known(x) ? BigInt(x) : undefined);
            switch (field.kind) {
              case "integer": case "reference": return BigInt(v);
              case "decimal": return typeof v === "string" ? v : String(v);
              case "money": return { minor_units: b(v.minor_units), currency: v.currency };
              case "geopoint": return { latitude: String(v.latitude), longitude: String(v.longitude), accuracy: known(v.accuracy) ? String(v.accuracy) : undefined };
              case "list": return v;
              case "text": case "date": case "time": case "datetime": case "boolean": case "choice": case "multi_choice": return v;
              default: {
                const ref = (r) => ({ id: b(r.id), byte_count: b(r.byte_count), content_type: r.content_type, digest: r.digest });
                return Array.isArray(v) ? v.map(ref) : ref(v);
              }
            }
          };
          // The JSON the payload pane shows: BigInt as digits, decimals as written.
          FS.json = function (value) {
            const out = (v) => {
              if (!known(v)) return undefined;
              if (typeof v === "bigint") return { raw: v.toString() };
              if (Array.isArray(v)) return v.map(out);
              if (typeof v === "object") { const o = {}; for (const [k, x] of Object.entries(v)) { const y = out(x); if (y !== undefined) o[k] = y; } return o; }
              return v;
            };
            return out(value);
          };
          // The payload as JSON text: BigInt as digits, decimals and coordinates as typed.
          FS.text = function (object, level) {
            const generic = (v) =>
              Array.isArray(v) ? "[" + v.map(generic).join(",") + "]"
              : typeof v === "bigint" ? v.toString()
              : v && typeof v === "object" ? "{" + Object.entries(v).filter(([, x]) => known(x)).map(([k, x]) => JSON.stringify(k) + ":" + generic(x)).join(",") + "}"
              : JSON.stringify(v);
            const number = (t) => (/^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/.test(String(t)) ? String(t) : JSON.stringify(t));
            const value = (field, v) => {
              switch (field.kind) {
                case "decimal": return number(v);
                case "geopoint": return "{" + ["latitude", "longitude", "accuracy"].filter((k) => known(v[k])).map((k) => JSON.stringify(k) + ":" + number(v[k])).join(",") + "}";
                case "list": return "[" + v.map((it) => FS.text(it, field.item())).join(",") + "]";
                default: return generic(v);
              }
            };
            return "{" + level.fields.filter((f) => known(object[f.name])).map((f) => JSON.stringify(f.name) + ":" + value(f, object[f.name])).join(",") + "}";
          };
          // A value that does not have its field's type: the one error a Swift decoder gives.
          FS.typeError = function (object, level, base) {
            const isInt = (v) => typeof v === "bigint";
            const isNumber = (v) => /^-?[0-9]+(\.[0-9]+)?$/.test(String(v));
            for (const field of level.fields) {
              const v = object[field.name], p = FS.at(base, field.name);
              if (!known(v)) continue;
              const bad =
                (field.kind === "integer" || field.kind === "reference") ? !isInt(v)
                : field.kind === "decimal" ? !isNumber(v)
                : field.kind === "money" ? !isInt(v.minor_units)
                : field.kind === "geopoint" ? !isNumber(v.latitude) || !isNumber(v.longitude) || (known(v.accuracy) && !isNumber(v.accuracy))
                : false;
              if (bad) return { pointer: p, code: "invalid", detail: "The value does not have the field's type." };
              if (field.kind === "list") {
                for (const [i, it] of v.entries()) { const e = FS.typeError(it, field.item(), FS.at(p, i)); if (e) return e; }
              }
            }
            return null;
          };
          const copy = (v) => (Array.isArray(v) ? v.map(copy) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copy(x)])) : v);

          let top = null;
          FS.state = () => top.read();
          FS.settled = () => { const h = copy(top.read()); FS.form.settle(h); return h; };
          FS.verdict = function () {
            const typeError = FS.typeError(top.read(), FS.form.root, "#");
            if (typeError) return { payload: null, errors: [typeError], relevance: {} };
            const settled = FS.settled();
            const v = new FS.Validator();
            FS.form.root.validate(settled, null, "#", v);
            const relevance = {};
            FS.form.root.relevance(settled, null, "#", true, relevance);
            return { payload: FS.text(settled, FS.form.root), errors: v.errors, relevance };
          };
          FS.load = function (object) { top.load(object); FS.update(); };

          // After every change: relevance hides, calculations show, filters offer, errors list.
          FS.update = function () {
            const verdict = FS.verdict();
            const settled = FS.settled();
            const walk = (form, level, h, p, base) => {
              for (const { field, w, row } of form.widgets) {
                const pointer = FS.at(base, field.name);
                row.hidden = verdict.relevance[pointer] === false;
                if (field.calculated) w.load(FS.stored(h[field.name]));
                if (w.options && level.offers[field.name]) {
                  for (const o of w.options.querySelectorAll("option, input")) {
                    if (o.value === "") continue;
                    const offered = FS.offer(level.offers[field.name], field, o.value, h, p) === true;
                    o.disabled = !offered;
                    (o.closest("label") || o).hidden = !offered;
                  }
                }
                if (w.rows) w.rows.forEach((r, i) => walk(r.form, field.item(), (h[field.name] || [])[i] || {}, h, FS.at(pointer, i)));
                row.classList.toggle("invalid", verdict.errors.some((e) => e.pointer === pointer || e.pointer.startsWith(pointer + "/")));
              }
            };
            walk(top, FS.form.root, settled, null, "#");
            document.getElementById("payload").textContent = verdict.payload === null ? "(a value does not have its field's type)" : JSON.stringify(JSON.parse(verdict.payload), null, 2);
            const list = document.getElementById("errors");
            list.replaceChildren(...verdict.errors.map((e) => el("li", {}, el("code", {}, e.pointer), " " + e.code + ": " + e.detail)));
            document.getElementById("summary").textContent = verdict.errors.length === 0 ? "valid: this payload would be queued" : verdict.errors.length + " error(s): the outbox would refuse it";
          };

          FS.start = function () {
            const box = document.getElementById("form");
            top = fieldsOf(FS.form.root, box);
            box.addEventListener("input", () => FS.update());
            box.addEventListener("change", () => FS.update());
            // A payload in the address (#payload=<base64 of its JSON>) fills the form.
            const shared = /^#payload=(.+)$/.exec(location.hash);
            if (shared) { try { top.load(JSON.parse(decodeURIComponent(escape(atob(shared[1]))))); } catch (e) { console.error("#payload", e); } }
            FS.update();
          };
        })();
        """#

    /// ISO 4217's digits as a script object literal (`CurrencyTable`).
    static var currencyDigits: String {
        "{ " + CurrencyTable.all.map { "\($0.code): \($0.digits)" }.joined(separator: ", ") + " }"
    }
}
