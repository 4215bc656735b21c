// [subject, relation, object entity] rows known to be new (see neo4j.py).
UNWIND $rows AS row
MATCH (s:Entity {id: row[0]})
MATCH (o:Entity {id: row[2]})
CREATE (s)-[:$(row[1])]->(o)
