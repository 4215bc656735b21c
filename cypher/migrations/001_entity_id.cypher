// One node per KG entity, found by its IRI.
CREATE CONSTRAINT tog_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE
