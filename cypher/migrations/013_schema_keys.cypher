// The kept look-ahead schema, by key.
CREATE CONSTRAINT tog_schema_key IF NOT EXISTS FOR (s:TogSchema) REQUIRE s.key IS UNIQUE
