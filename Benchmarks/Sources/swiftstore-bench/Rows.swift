// Every row of the suite, in the order of Benchmarks/README.md. A row whose feature does not exist
// yet is simply not listed here (never a placeholder).

func allRows(scaleMax: Int = 10_000_000) -> [Row] {
    [
        insertRow(id: "insert.rows.50k", size: 50_000, goal: "<= 0.5x", timeOpen: true),
        insertObjectsRow(),
        addSequenceRow(),
        upsertObjectsRow(),
        fetchRowsRow(),
        fetchObjectsRow(),
        countWhereObjectsRow(),
        insertRow(id: "insert.bulk.1M", size: 1_000_000, goal: "<= 0.33x", timeOpen: false),
        commitRow(durable: true),
        commitRow(durable: false),
        readBeginRow(),
        sumRow(),
        sumObjectsRow(),
        countWhereRow(),
        queryEqRow(indexed: true),
        queryEqRow(indexed: false),
        sortRow(),
        pkGetRow(),
        sizeObjectsRow(),
        compactRow(),
        backupRow(),
        sizeAfterChurnRow(),
        notify1kRow(),
        notify200kRow(),
        notifyLatencyRow(),
        notifyObserversRow(),
        mirrorInitialRow(),
        mirrorLagRow(),
        freezeRow(),
        commitAsyncRow(),
        sectionedRow(),
    ] + scaleRows(maxSize: scaleMax)
}
