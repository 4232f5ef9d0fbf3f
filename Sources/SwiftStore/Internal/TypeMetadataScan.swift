// Finds every class in the process that inherits from a given base, without an ObjC runtime.
//
// RealmSwift, given no `objectTypes`, uses every `Object` subclass in the process as the schema;
// on Apple platforms it asks the ObjC runtime for them. Linux has no such runtime, so this file
// reads the Swift runtime's own type records instead. Nothing here is cached: every call rescans,
// and the caller keeps the result.
//
// Where the records come from. Every Swift image (executable or shared library) carries a
// `swift5_type_metadata` section, and the runtime registers each image's metadata sections when
// the image loads. `swift_enumerateAllMetadataSections(body, context)`, exported by the Swift
// runtime on ELF platforms (and Windows), calls `body(sections, context)` once per registered
// image until `body` returns false. `sections` points at a `MetadataSections` structure
// (SwiftShims `MetadataSections.h`; 64-bit offsets):
//
//     OFFSET | SIZE | MEANING
//          0 |    8 | version; `swift5_type_metadata` is present from version 1 on
//          8 |    8 | base address of the image
//      16-31 |   16 | unused
//      32-63 |   32 | protocols, protocol conformances (start, length each)
//         64 |    8 | swift5_type_metadata start address
//         72 |    8 | swift5_type_metadata length in bytes
//
// The structure only grows at its end (its header says so, and bumps `version` when it does), so
// these offsets hold for every version; a version of 0 is skipped.
//
// A type metadata record (4 bytes) is a 32-bit offset relative to the record's own address. Its
// low two bits say what it points at: 0, a type context descriptor; 1, a pointer-sized slot that
// holds the address of one; 2 and 3, ObjC class references, which are skipped.
//
// A type context descriptor (offsets from its start, all 4-byte fields):
//
//     OFFSET | SIZE | MEANING
//          0 |    4 | flags: bits 0-4 kind (16 class), bit 7 generic; bits 16-17 hold a class's
//            |      | metadata initialization (0 none, 1 singleton, 2 foreign)
//          4 |    4 | parent context (relative), unused here
//          8 |    4 | name (relative), unused here
//         12 |    4 | metadata access function (relative, direct; 0 if there is none)
//         16 |    4 | field descriptor (relative), unused here
//         20 |    4 | class only: superclass mangled name (relative; 0 for a root class)
//
// The access function of a non-generic type takes a metadata request (0 asks for complete
// metadata, blocking until it is) and returns the metadata pointer first in its result, in the
// first return register under both the Swift and the C calling convention, which is why it can be
// called through a `@convention(c) (Int) -> UnsafeRawPointer?` type. A class's superclass chain is
// then walked with the standard library's `_getSuperclass(_:)`.
//
// Why this is stable: the record format, the descriptor header and the class descriptor's first
// fields are part of Swift's ABI (docs/ABI/TypeMetadata.rst in the Swift repository), fixed since
// Swift 5.0 because Apple platforms ship the runtime in the OS and must read binaries built by
// any later compiler; `MetadataSections` is versioned and append-only for the same reason, and
// swift-testing relies on both to discover tests on ELF platforms.
//
// Invariants:
// 1. Nothing is read beyond the section range the runtime reports; records whose offset is 0, or
//    whose indirect slot is null, are skipped.
// 2. Only class descriptors that are not generic (so their access function takes a request and
//    nothing else), not foreign, have an access function and declare a superclass have their
//    access function called. Everything else is skipped without being touched further.
// 3. Access functions are called only after the section enumeration has returned, so no runtime
//    lock the enumeration may hold is held while metadata is being initialized.
//
// Fallback: on a platform whose runtime does not export `swift_enumerateAllMetadataSections`
// (Apple platforms, where the ObjC runtime is the way, or anything not listed in `#if` below) the
// scan returns [], and the caller falls back to registering classes on first use. The symbol is
// linked directly rather than looked up with `dlsym`, because `dlsym` cannot find it when the
// standard library is linked statically (`--static-swift-stdlib`); every Swift 6 runtime on the
// listed platforms exports it.

/// Finds classes by scanning the Swift type metadata records of every loaded image.
///
/// Used to build the default schema (every `Object` subclass in the process) on platforms without
/// an ObjC runtime. The layout it relies on is described at the top of `TypeMetadataScan.swift`.
package enum TypeMetadataScan {
    /// Every non-generic class in every loaded image whose superclass chain contains `base`.
    ///
    /// `base` itself is not included. Generic classes (and classes nested in generic types) are
    /// skipped: their metadata cannot be made without generic arguments. The result is sorted by
    /// `String(reflecting:)`, so it is the same on every call in a process. Every call rescans;
    /// callers that need the answer more than once should keep it.
    ///
    /// ```swift
    /// let models = TypeMetadataScan.classes(inheritingFrom: Object.self)
    /// ```
    ///
    /// - Parameter base: The class whose subclasses to find.
    /// - Returns: The subclasses, direct and indirect, or [] when the platform's runtime offers
    ///   no way to enumerate its metadata sections.
    package static func classes(inheritingFrom base: AnyClass) -> [AnyClass] {
        let baseID = ObjectIdentifier(base)
        var seen = Set<ObjectIdentifier>()
        var found: [(name: String, cls: AnyClass)] = []
        for accessor in classMetadataAccessors() {
            guard let metadata = accessor(0) else { continue }
            let cls: AnyClass = unsafeBitCast(metadata, to: AnyClass.self)
            let id = ObjectIdentifier(cls)
            guard id != baseID, !seen.contains(id), inherits(cls, from: baseID) else { continue }
            seen.insert(id)
            found.append((String(reflecting: cls), cls))
        }
        found.sort { $0.name < $1.name }
        return found.map(\.cls)
    }

    /// The type of a non-generic type's metadata access function, called with a metadata request.
    ///
    /// The function returns a `MetadataResponse` (metadata, state); only the metadata, which comes
    /// back in the first return register, is read.
    typealias MetadataAccessor = @convention(c) (Int) -> UnsafeRawPointer?

    /// The kind number of a class context descriptor (`ContextDescriptorKind::Class`).
    static let classKind: UInt32 = 16

    /// The bit set in a context descriptor's flags when the context is generic.
    static let genericFlag: UInt32 = 0x80

    /// The metadata initialization value (flags bits 16-17) of a foreign class.
    static let foreignInitialization: UInt32 = 2

    /// Whether `cls`'s superclass chain, `cls` excluded, contains the class `baseID` identifies.
    ///
    /// - Parameters:
    ///   - cls: The class to test.
    ///   - baseID: The identity of the ancestor looked for.
    /// - Returns: True if some superclass of `cls` is that class.
    static func inherits(_ cls: AnyClass, from baseID: ObjectIdentifier) -> Bool {
        var next: AnyClass? = _getSuperclass(cls)
        while let ancestor = next {
            if ObjectIdentifier(ancestor) == baseID { return true }
            next = _getSuperclass(ancestor)
        }
        return false
    }

    /// The access functions of every candidate class in every loaded image (invariant 2).
    ///
    /// - Returns: One access function per non-generic, non-foreign class that has a superclass.
    static func classMetadataAccessors() -> [MetadataAccessor] {
        typeMetadataSections().flatMap { section in
            stride(from: 0, to: section.count - 3, by: 4).compactMap { offset in
                classDescriptor(atRecord: section.baseAddress! + offset).flatMap(accessor(of:))
            }
        }
    }

    /// Reads one type metadata record and returns the context descriptor it refers to.
    ///
    /// - Parameter record: The address of the 4-byte record.
    /// - Returns: The descriptor if the record refers to one (directly or through a slot) and it
    ///   is a class descriptor; nil for ObjC class references, null offsets and other kinds.
    static func classDescriptor(atRecord record: UnsafeRawPointer) -> UnsafeRawPointer? {
        let raw = record.load(as: Int32.self)
        let referenceKind = raw & 3
        let offset = Int(raw & ~3)
        guard offset != 0 else { return nil }
        let target = record + offset
        let descriptor: UnsafeRawPointer?
        switch referenceKind {
        case 0: descriptor = target
        case 1: descriptor = target.load(as: UnsafeRawPointer?.self)
        default: descriptor = nil
        }
        guard let descriptor, Int(bitPattern: descriptor) & 3 == 0 else { return nil }
        let flags = descriptor.load(as: UInt32.self)
        return flags & 0x1F == classKind ? descriptor : nil
    }

    /// The metadata access function of a class descriptor, if it is safe to call with a request
    /// alone and the class could be a subclass of anything.
    ///
    /// - Parameter descriptor: A class context descriptor.
    /// - Returns: The access function, or nil for generic and foreign classes, root classes, and
    ///   descriptors without one.
    static func accessor(of descriptor: UnsafeRawPointer) -> MetadataAccessor? {
        let flags = descriptor.load(as: UInt32.self)
        guard flags & genericFlag == 0 else { return nil }
        guard (flags >> 16) & 3 != foreignInitialization else { return nil }
        guard descriptor.load(fromByteOffset: 20, as: Int32.self) != 0 else { return nil }
        let accessorOffset = Int(descriptor.load(fromByteOffset: 12, as: Int32.self))
        guard accessorOffset != 0 else { return nil }
        return unsafeBitCast(descriptor + 12 + accessorOffset, to: MetadataAccessor.self)
    }
}

#if os(Linux) || os(Android) || os(FreeBSD) || os(OpenBSD) || os(Windows)

/// The Swift runtime's enumeration of registered metadata sections, one call of `body` per image.
///
/// - Parameters:
///   - body: Called with the image's `MetadataSections` and `context`; returns false to stop.
///   - context: Passed through to `body`.
@_silgen_name("swift_enumerateAllMetadataSections")
private func swiftEnumerateAllMetadataSections(
    _ body: @convention(c) (_ sections: UnsafeRawPointer, _ context: UnsafeMutableRawPointer?) -> Bool,
    _ context: UnsafeMutableRawPointer?
)

extension TypeMetadataScan {
    /// The `swift5_type_metadata` section of every image the runtime has registered.
    ///
    /// - Returns: One buffer per image with a non-empty section, in registration order.
    static func typeMetadataSections() -> [UnsafeRawBufferPointer] {
        var sections: [UnsafeRawBufferPointer] = []
        withUnsafeMutablePointer(to: &sections) { sectionsPointer in
            swiftEnumerateAllMetadataSections({ image, context in
                let sections = context!.assumingMemoryBound(to: [UnsafeRawBufferPointer].self)
                guard image.load(as: UInt.self) >= 1 else { return true }
                let start = image.load(fromByteOffset: 64, as: UInt.self)
                let length = image.load(fromByteOffset: 72, as: UInt.self)
                if let base = UnsafeRawPointer(bitPattern: start), length > 0 {
                    sections.pointee.append(UnsafeRawBufferPointer(start: base, count: Int(length)))
                }
                return true
            }, UnsafeMutableRawPointer(sectionsPointer))
        }
        return sections
    }
}

#else

extension TypeMetadataScan {
    /// No sections: this platform's runtime offers no enumeration, so the scan finds nothing.
    ///
    /// - Returns: [].
    static func typeMetadataSections() -> [UnsafeRawBufferPointer] { [] }
}

#endif
