MERGE (m:TogMigration {id: $id}) ON CREATE SET m.applied = $applied
