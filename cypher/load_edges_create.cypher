// [subject node id, relation, object node id] rows known to be new; the ids
// come from load_entities / load_values in the same transaction.
UNWIND $rows AS row
MATCH (s) WHERE id(s) = row[0]
MATCH (o) WHERE id(o) = row[2]
CREATE (s)-[:$(row[1])]->(o)
