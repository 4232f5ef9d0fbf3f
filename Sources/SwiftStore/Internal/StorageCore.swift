import CStore

/// Facts about the storage core this module is built on.
///
/// The object API (`Realm`, `Object`, `@Persisted`, ...) is built on top of CStore, the C core
/// described in `docs/ARCHITECTURE.md`.
public enum StorageCore {
    /// The version of the CStore library (wraps `cs_library_version`).
    public static var libraryVersion: String { String(cString: cs_library_version()) }

    /// The on-disk format version new files are written in (wraps `cs_format_version`).
    public static var formatVersion: Int { Int(cs_format_version()) }
}
