"""The Iceberg REST catalog: the REST Catalog protocol over the same handler, cache and database
as the Thrift port (docs/iceberg-rest.md)."""
