import Foundation
import Testing
@testable import SwiftStore
@_exported import TestSupport

extension TempDir {
    /// A configuration for a file in the directory with the given model classes.
    func config(_ types: [ObjectBase.Type], file: String = "test.realm", version: UInt64 = 0) -> Realm.Configuration {
        Realm.Configuration(fileURL: self.file(file), schemaVersion: version, objectTypes: types)
    }
}

// MARK: - Models shared by the object-layer tests

enum Mood: String, PersistableEnum { case calm, happy, grumpy }
enum Level: Int, PersistableEnum { case low = 1, mid = 5, high = 9 }

struct Celsius: CustomPersistable, Hashable {
    var degrees: Double
    init(degrees: Double) { self.degrees = degrees }
    init(persistedValue: Double) { degrees = persistedValue }
    var persistableValue: Double { degrees }
}

final class AllTypes: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var bool = false
    @Persisted var float: Float = 0
    @Persisted var double: Double = 0
    @Persisted var string = ""
    @Persisted var data = Data()
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var decimal = Decimal128(value: 0)
    @Persisted var objectId = ObjectId()
    @Persisted var uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Persisted var any: AnyRealmValue = .none
    @Persisted var mood = Mood.calm
    @Persisted var level = Level.low
    @Persisted var temperature = Celsius(degrees: 0)

    @Persisted var optInt: Int?
    @Persisted var optInt8: Int8?
    @Persisted var optInt16: Int16?
    @Persisted var optInt32: Int32?
    @Persisted var optInt64: Int64?
    @Persisted var optBool: Bool?
    @Persisted var optFloat: Float?
    @Persisted var optDouble: Double?
    @Persisted var optString: String?
    @Persisted var optData: Data?
    @Persisted var optDate: Date?
    @Persisted var optDecimal: Decimal128?
    @Persisted var optObjectId: ObjectId?
    @Persisted var optUUID: UUID?
    @Persisted var optMood: Mood?
    @Persisted var optTemperature: Celsius?

    @Persisted var intList: List<Int>
    @Persisted var stringList: List<String>
    @Persisted var optIntList: List<Int?>
    @Persisted var dateSet: MutableSet<Date>
    @Persisted var doubleMap: Map<String, Double>
    @Persisted var anyList: List<AnyRealmValue>

    let legacyAge = RealmProperty<Int?>()
    let legacyName = RealmOptional<String>()
}

final class Person: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<Dog>
    @Persisted var favorites: MutableSet<Dog>
    @Persisted var dogsByName: Map<String, Dog?>
    @Persisted var address: Address?
    @Persisted var pastAddresses: List<Address>
    @Persisted var bestFriend: Person?

    convenience init(name: String, age: Int) {
        self.init()
        self.name = name
        self.age = age
    }
}

final class Dog: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var owner: Person?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<Person>
}

final class Address: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var city = ""
}

class Animal: Object {
    @Persisted var legs = 4
}

final class Cat: Animal {
    @Persisted var name = ""
}

let objectModels: [ObjectBase.Type] = [AllTypes.self, Person.self, Dog.self, Address.self]
