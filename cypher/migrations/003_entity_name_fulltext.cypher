// Full-text search over entity names (Browser: CALL db.index.fulltext.queryNodes("tog_entity_names", "Paul~")).
CREATE FULLTEXT INDEX tog_entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name]
