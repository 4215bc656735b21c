// Ids of the schema migrations already applied to this database.
MATCH (m:TogMigration) RETURN m.id AS id
