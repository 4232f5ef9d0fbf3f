import CStore

/// Facts about the storage core this module is built on.
///
/// The object API (`Realm`, `Object`, `@Persisted`, ...) is built on top of CStore, the C core
/// described in `docs/ARCHITECTURE.md`.
public enum StorageCore {
    /// The version of the CStore library (wraps `cs_library_version`).
    public static var libraryVersion: String { String(cString: cs_library_version()) }

    /// The newest on-disk format version this library reads and writes (wraps
    /// `cs_format_version`): 4. A file is written in the lowest version that describes it: 1
    /// when new or compacted, 2 when such a file has an index on an `AnyRealmValue` property,
    /// and 4 from its first commit on (its free list is chunked and its integer nodes may be
    /// frame-of-reference packed), as is a compacted file holding such a node (docs/FORMAT.md §2).
    public static var formatVersion: Int { Int(cs_format_version()) }
}
