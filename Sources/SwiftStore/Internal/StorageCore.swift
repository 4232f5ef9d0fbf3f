import CStore

/// Facts about the storage core this module is built on.
///
/// The object API (`Realm`, `Object`, `@Persisted`, ...) is built on top of CStore, the C core
/// described in `docs/ARCHITECTURE.md`.
public enum StorageCore {
    /// The version of the CStore library (wraps `cs_library_version`).
    public static var libraryVersion: String { String(cString: cs_library_version()) }

    /// The newest on-disk format version this library reads and writes (wraps
    /// `cs_format_version`): 6. A file is written in the lowest version that describes it: 1
    /// when new or compacted, 2 when such a file has an index on an `AnyRealmValue` property,
    /// 4 or 5 when compacted with frame-of-reference packed nodes or primary-key keyed tables,
    /// and 6 from its first commit on (its free list is chunked with a delta chain of the
    /// commits' changes on top, docs/FORMAT.md §2 and §7.1.1).
    public static var formatVersion: Int { Int(cs_format_version()) }
}
