// The object-level rows: SwiftStore's Swift API (Objects+SwiftStore.swift) against GRDB
// records (Objects+GRDB.swift). Objects and rows are the C API rows' shape: 10 Ints, object
// (row) r holding r in every property (r from 0).

// MARK: - insert.objects.50k

func insertObjectsRow() -> Row {
    Row(
        id: "insert.objects.50k", size: 50_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreInsertObjects,
        peerSide: grdbInsertRecords)
}

// MARK: - add.sequence.50k

/// insert.objects.50k through `realm.add` of an array of the 50k Items (made inside the timed
/// write), against the same GRDB side.
func addSequenceRow() -> Row {
    Row(
        id: "add.sequence.50k", size: 50_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreAddSequence,
        peerSide: grdbInsertRecords)
}

// MARK: - fetch.objects.200k

func fetchObjectsRow() -> Row {
    Row(
        id: "fetch.objects.200k", size: 200_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreFetchObjects,
        peerSide: grdbFetchRecords)
}
