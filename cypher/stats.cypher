// Counts from Neo4j's count store (no scans).
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH (v:Value) RETURN count(v) AS values }
CALL () { MATCH (n:TogName) RETURN count(n) AS names }
CALL () { MATCH (r:TogRun) RETURN count(r) AS runs }
CALL () { MATCH ()-[r]->() RETURN count(r) AS relationships }
CALL () { MATCH (:TogPath)-[r]->() RETURN count(r) AS run_relationships }
CALL () { MATCH (:TogRun)-[r]->() RETURN count(r) AS roots }
CALL () { MATCH (:TogCorrection)-[r]->() RETURN count(r) AS provenance }
CALL () { MATCH (:TogSimulated)-[r]->() RETURN count(r) AS foreseen }
RETURN entities, values, names, runs,
       relationships - run_relationships - roots - provenance - foreseen AS edges
