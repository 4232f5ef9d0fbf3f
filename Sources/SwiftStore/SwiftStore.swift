@_exported import CStore
