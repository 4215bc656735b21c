// Edges of one relationship type (Neo4j answers from its count store).
MATCH ()-[r:{{type}}]->() RETURN count(r) AS n
