import CStore
import CStoreCall
import Foundation

// The change feed as the `changes` and `mirror` commands read it (docs/ARCHITECTURE.md, The
// change feed in the tool): the records a feed slot hands out, grouped per commit and object,
// with the objects' values read from the version the batch ends at.

/// What happened to one object in one commit.
enum FeedOp: String {
    case insert, update, delete, collection, schema
}

/// One line of the feed: one object's changes in one commit, or a schema change.
struct FeedLine {
    var version: UInt64
    /// The version's commit time in microseconds since 1970 (UTC); 0 when the file does not
    /// record it (a version committed by a library that kept no commit times).
    var time: Int64 = 0
    var op: FeedOp
    var table: UInt32 = CS_NONE
    var className: String = ""
    var key: Int64 = 0
    /// The primary key's value (JSON-ready) when the class has one and it could be read.
    var pk: Any?
    /// Property name -> new value (JSON-ready), for insert, update and collection.
    var values: [String: Any] = [:]
    /// The columns changed (update, collection; an insert changes them all).
    var cols: [UInt32] = []
    /// Properties of this line that a later commit of the same batch changed again: the batch's
    /// values are read at its last version, so theirs are printed only on that later line.
    var changedLater: [String] = []

    /// The JSON object printed by `swiftstore changes --json`.
    var json: [String: Any] {
        var o: [String: Any] = ["version": version, "op": op.rawValue, "time": commitTimeText(time) ?? NSNull()]
        if op == .schema {
            o["classes"] = values["classes"] ?? []
            return o
        }
        o["class"] = className
        o["key"] = key
        if let pk { o["pk"] = pk }
        if op != .delete { o["changes"] = values }
        if !changedLater.isEmpty { o["changedLater"] = changedLater }
        return o
    }
}

/// A commit time as RFC 3339 text in UTC with microseconds ("2026-11-27T08:51:37.123456Z"); nil
/// for 0 (not recorded).
func commitTimeText(_ us: Int64) -> String? {
    guard us != 0 else { return nil }
    var secs = time_t(us >= 0 ? us / 1_000_000 : (us - 999_999) / 1_000_000)
    let frac = us - Int64(secs) * 1_000_000
    var tm = tm()
    guard gmtime_r(&secs, &tm) != nil else { return nil }
    return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", Int(tm.tm_year) + 1900, Int(tm.tm_mon) + 1, Int(tm.tm_mday),
                  Int(tm.tm_hour), Int(tm.tm_min), Int(tm.tm_sec), Int(frac))
}

/// Reads one table's schema (visible properties) once per batch.
struct TableShape {
    var name: String
    var embedded: Bool
    var primary: UInt32
    var columns: [(col: UInt32, info: cs_column_info, name: String)]
}

func tableShape(_ txn: OpaquePointer, _ table: UInt32) -> TableShape? {
    var info = cs_table_info()
    guard cs_table_info_get(txn, table, &info) == 0 else { return nil }
    var cols: [(UInt32, cs_column_info, String)] = []
    for col in 0..<info.col_slots {
        var ci = cs_column_info()
        guard cs_column_info_get(txn, table, col, &ci) == 0, (ci.flags & UInt32(CS_COL_HIDDEN)) == 0 else { continue }
        cols.append((col, ci, String(cString: ci.name)))
    }
    return TableShape(name: String(cString: info.name), embedded: (info.flags & UInt32(CS_TABLE_EMBEDDED)) != 0,
                      primary: info.primary, columns: cols.map { (col: $0.0, info: $0.1, name: $0.2) })
}

/// The schema as JSON (for schema lines): classes with their properties and types.
func schemaJSON(_ txn: OpaquePointer) -> [[String: Any]] {
    var out: [[String: Any]] = []
    for t in 0..<cs_table_slots(txn) {
        guard let s = tableShape(txn, t) else { continue }
        var props: [[String: Any]] = []
        for c in s.columns {
            var p: [String: Any] = ["name": c.name, "type": Int(c.info.type.rawValue), "collection": Int(c.info.coll.rawValue),
                                    "nullable": (c.info.flags & UInt32(CS_COL_NULLABLE)) != 0]
            if c.info.type == CS_TYPE_LINK, let target = tableShape(txn, c.info.target) { p["target"] = target.name }
            if c.col == s.primary { p["primary"] = true }
            props.append(p)
        }
        out.append(["name": s.name, "embedded": s.embedded, "properties": props])
    }
    return out
}

/// Renders values for the feed: links as the target's primary key (or its object key when the
/// target has none), embedded objects inline, collections whole.
struct FeedValues {
    let txn: OpaquePointer
    var shapes: [UInt32: TableShape] = [:]

    init(_ txn: OpaquePointer) { self.txn = txn }

    mutating func shape(_ t: UInt32) -> TableShape? {
        if let s = shapes[t] { return s }
        let s = tableShape(txn, t)
        shapes[t] = s
        return s
    }

    mutating func scalar(_ v: cs_value) throws -> Any {
        guard v.type == CS_TYPE_LINK else { return jsonValue(v, txn) }
        let target = v.v.link.table, key = v.v.link.key
        guard let s = shape(target) else { return NSNull() }
        if s.embedded { return try object(target, key) }
        if s.primary != CS_NONE {
            var o = cs_obj()
            guard cs_obj_open(txn, target, key, &o) == 0 else { return NSNull() }
            var pv = cs_value()
            try CStoreError.check(cs_obj_get(&o, s.primary, &pv))
            return jsonValue(pv, txn)
        }
        return ["$key": key]
    }

    /// One property's current value.
    mutating func property(_ o: inout cs_obj, _ col: UInt32, _ info: cs_column_info) throws -> Any {
        if info.coll == CS_COLL_NONE {
            var v = cs_value()
            try CStoreError.check(cs_obj_get(&o, col, &v))
            if v.type == CS_TYPE_LIST || v.type == CS_TYPE_DICT {
                // a Mixed value holding a nested collection: rendered whole
                var c = cs_coll()
                try CStoreError.check(cs_coll_open(&o, col, &c))
                return try collection(&c)
            }
            return try scalar(v)
        }
        var c = cs_coll()
        try CStoreError.check(cs_coll_open(&o, col, &c))
        return try collection(&c)
    }

    /// A list or set as an array, a map as an object; nested collections (in Mixed elements)
    /// likewise.
    mutating func collection(_ c: inout cs_coll) throws -> Any {
        var n = 0
        try CStoreError.check(cs_coll_size(&c, &n))
        if cs_coll_kind_of(&c) == CS_COLL_MAP {
            var m: [String: Any] = [:]
            for i in 0..<n {
                var k = cs_value(), v = cs_value()
                try CStoreError.check(cs_map_get_at(&c, i, &k, &v))
                let key = jsonValue(k, txn) as? String ?? "?"
                if v.type == CS_TYPE_LIST || v.type == CS_TYPE_DICT {
                    var child = cs_coll()
                    let raw = UnsafeRawPointer(k.v.bytes.ptr).map { $0.assumingMemoryBound(to: CChar.self) }
                    try CStoreError.check(cs_coll_open_nested(&c, -1, raw, k.v.bytes.len, &child))
                    m[key] = try collection(&child)
                } else {
                    m[key] = try scalar(v)
                }
            }
            return m
        }
        var a: [Any] = []
        for i in 0..<n {
            var v = cs_value()
            try CStoreError.check(cs_list_get(&c, i, &v))
            if v.type == CS_TYPE_LIST || v.type == CS_TYPE_DICT {
                var child = cs_coll()
                try CStoreError.check(cs_coll_open_nested(&c, Int64(i), nil, 0, &child))
                a.append(try collection(&child))
            } else {
                a.append(try scalar(v))
            }
        }
        return a
    }

    /// Every visible property of an object (embedded objects are rendered this way inline).
    mutating func object(_ table: UInt32, _ key: Int64) throws -> [String: Any] {
        guard let s = shape(table) else { return [:] }
        var o = cs_obj()
        try CStoreError.check(cs_obj_open(txn, table, key, &o))
        var out: [String: Any] = [:]
        for c in s.columns { out[c.name] = try property(&o, c.col, c.info) }
        return out
    }

    mutating func pk(_ table: UInt32, _ key: Int64) -> Any? {
        guard let s = shape(table), s.primary != CS_NONE else { return nil }
        var o = cs_obj()
        guard cs_obj_open(txn, table, key, &o) == 0 else { return nil }
        var v = cs_value()
        guard cs_obj_get(&o, s.primary, &v) == 0 else { return nil }
        return jsonValue(v, txn)
    }

    /// The top-level (non-embedded) owner of an embedded object and the owner's property
    /// holding it, by following the embedded object's one backlink up.
    mutating func owner(_ table: UInt32, _ key: Int64) throws -> (table: UInt32, key: Int64, col: UInt32)? {
        var t = table, k = key
        var viaCol: UInt32 = CS_NONE
        for _ in 0..<64 {
            guard let s = shape(t), s.embedded else { return viaCol == CS_NONE ? nil : (t, k, viaCol) }
            var info = cs_table_info()
            try CStoreError.check(cs_table_info_get(txn, t, &info))
            var o = cs_obj()
            guard cs_obj_open(txn, t, k, &o) == 0 else { return nil }
            var found = false
            for col in 0..<info.col_slots {
                var ci = cs_column_info()
                guard cs_column_info_get(txn, t, col, &ci) == 0, ci.type == CS_TYPE_BACKLINK else { continue }
                var n = 0
                try CStoreError.check(cs_obj_backlink_count(&o, ci.target, ci.origin_col, &n))
                if n == 0 { continue }
                var origin: Int64 = 0
                try CStoreError.check(cs_obj_backlink_get(&o, ci.target, ci.origin_col, 0, &origin))
                t = ci.target
                k = origin
                viaCol = ci.origin_col
                found = true
                break
            }
            if !found { return nil }
        }
        return nil
    }
}

/// Turns the change records after `since` (as a feed slot hands them out) into feed lines, with
/// values read in `txn` (the version the batch ends at). An object inserted or updated and then
/// deleted within the batch gets only its delete line; changes to embedded objects are reported
/// as a change of their owner's property that holds them.
/// `previous`: a transaction on the version the batch starts at, when the reader still pins it,
/// for the primary keys of deleted objects that the history did not record (versions committed by
/// a library that kept no deleted keys).
/// `render` false: the lines carry no values (`cols` says which columns changed).
func feedLines(_ txn: OpaquePointer, slot: String, since: UInt64, previous: OpaquePointer?, render: Bool = true) throws -> [FeedLine] {
    var h: OpaquePointer?
    try CStoreError.check(cs_feed_changes_open(txn, slot, since, &h))
    defer { cs_changes_close(h) }
    var records: [cs_change] = []
    var c = cs_change()
    while true {
        let rc = cs_changes_next(h, &c)
        if rc == Int32(CS_NOTFOUND) { break }
        try CStoreError.check(rc)
        records.append(c)
    }
    var values = FeedValues(txn)
    var old = previous.map { FeedValues($0) }
    // objects deleted anywhere in the batch, per table
    var deletedLater: [UInt32: Set<Int64>] = [:]
    for r in records where r.kind == CS_CHANGE_DELETE {
        for k in r.key..<(r.key + r.a) { deletedLater[r.table, default: []].insert(k) }
    }
    var lines: [FeedLine] = []
    var i = 0
    while i < records.count {
        let version = records[i].version, time = records[i].time_us
        var j = i
        while j < records.count && records[j].version == version { j += 1 }
        // per (table, key): op and changed columns, in first-seen order
        struct Acc { var table: UInt32; var key: Int64; var op: FeedOp; var cols: [UInt32] }
        var order: [Acc] = []
        var index: [String: Int] = [:]
        func acc(_ t: UInt32, _ k: Int64, _ op: FeedOp) -> Int {
            let id = "\(t):\(k)"
            if let n = index[id] {
                let cur = order[n].op
                if op == .delete { order[n].op = cur == .insert ? .schema /* created and deleted: nothing */ : .delete }
                else if op == .update && cur == .collection { order[n].op = .update }
                return n
            }
            order.append(Acc(table: t, key: k, op: op, cols: []))
            index[id] = order.count - 1
            return order.count - 1
        }
        var schemaChanged = false
        for r in records[i..<j] {
            switch r.kind {
            case CS_CHANGE_SCHEMA: schemaChanged = true
            case CS_CHANGE_CREATE: for k in r.key..<(r.key + r.a) { _ = acc(r.table, k, .insert) }
            case CS_CHANGE_DELETE: for k in r.key..<(r.key + r.a) { _ = acc(r.table, k, .delete) }
            default:
                let n = acc(r.table, r.key, r.kind == CS_CHANGE_SET ? .update : .collection)
                if !order[n].cols.contains(r.col) { order[n].cols.append(r.col) }
            }
        }
        if schemaChanged {
            lines.append(FeedLine(version: version, time: time, op: .schema, values: ["classes": schemaJSON(txn)]))
        }
        var ownersDone = Set<String>()
        for a in order where a.op != .schema {
            guard let s = values.shape(a.table) ?? old?.shape(a.table) else { continue }
            if s.embedded {
                // an embedded object's change is its owner's property change
                if a.op == .delete || deletedLater[a.table]?.contains(a.key) == true { continue }
                guard let (ot, ok, ocol) = try values.owner(a.table, a.key),
                      deletedLater[ot]?.contains(ok) != true, index["\(ot):\(ok)"].map({ order[$0].op != .insert }) ?? true,
                      !ownersDone.contains("\(ot):\(ok):\(ocol)"), let os = values.shape(ot),
                      let c = os.columns.first(where: { $0.col == ocol }) else { continue }
                ownersDone.insert("\(ot):\(ok):\(ocol)")
                var o = cs_obj()
                try CStoreError.check(cs_obj_open(txn, ot, ok, &o))
                var line = FeedLine(version: version, time: time, op: .update, table: ot, className: os.name, key: ok, pk: values.pk(ot, ok))
                line.cols = [ocol]
                if render { line.values = [c.name: try values.property(&o, c.col, c.info)] }
                lines.append(line)
                continue
            }
            var line = FeedLine(version: version, time: time, op: a.op, table: a.table, className: s.name, key: a.key)
            if a.op == .delete {
                // the key the history recorded at the delete (FORMAT.md §8.3), else read in the
                // version the batch starts at when the reader still pins it
                var pk = cs_value()
                if cs_changes_deleted_pk(h, version, a.table, a.key, &pk) == 0 {
                    line.pk = jsonValue(pk, txn)
                } else {
                    line.pk = old?.pk(a.table, a.key)
                }
                lines.append(line)
                continue
            }
            if deletedLater[a.table]?.contains(a.key) == true { continue }
            var o = cs_obj()
            guard cs_obj_open(txn, a.table, a.key, &o) == 0 else { continue }
            line.pk = values.pk(a.table, a.key)
            line.cols = a.cols
            if !render {
                lines.append(line)
                continue
            }
            if a.op == .insert {
                line.values = try values.object(a.table, a.key)
            } else {
                for col in a.cols {
                    guard let c = s.columns.first(where: { $0.col == col }) else { continue }
                    line.values[c.name] = try values.property(&o, c.col, c.info)
                }
            }
            lines.append(line)
        }
        i = j
    }
    if render { withholdLaterValues(&lines, &values) }
    return lines
}

/// The values of a batch are read at its last version, which holds the value each property got
/// from the last commit that wrote it. So a line keeps the value of a property only when no later
/// commit of the batch changed that property of that object; otherwise the value is removed
/// from the line and the property listed in `changedLater` (its value is on the later line).
/// Every value printed is then the one the property had right after the line's commit.
private func withholdLaterValues(_ lines: inout [FeedLine], _ values: inout FeedValues) {
    var later: [String: Set<UInt32>] = [:] // object -> columns changed by later commits
    var end = lines.count
    while end > 0 {
        // one commit's lines (an object may have two: its own and an embedded object's)
        var start = end - 1
        while start > 0 && lines[start - 1].version == lines[end - 1].version { start -= 1 }
        for n in start..<end where lines[n].op == .insert || lines[n].op == .update || lines[n].op == .collection {
            guard let cols = later["\(lines[n].table):\(lines[n].key)"], let s = values.shape(lines[n].table) else { continue }
            for c in s.columns where cols.contains(c.col) && lines[n].values[c.name] != nil {
                lines[n].values[c.name] = nil
                lines[n].changedLater.append(c.name)
            }
            lines[n].changedLater.sort()
        }
        for n in start..<end where lines[n].op != .schema {
            let id = "\(lines[n].table):\(lines[n].key)"
            if lines[n].op == .delete { later[id] = nil } else { later[id, default: []].formUnion(lines[n].cols) }
        }
        end = start
    }
}
