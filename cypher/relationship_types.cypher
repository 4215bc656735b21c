// Every relationship type the database knows (a KG relation's type is its IRI).
CALL db.relationshipTypes() YIELD relationshipType
RETURN collect(relationshipType) AS types
