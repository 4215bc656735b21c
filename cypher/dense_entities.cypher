// Every entity with more than $min relationships, either way: those that may
// have a pair past SORT_MAX (a dense node's count comes from its degree store).
MATCH (n:Entity) WHERE COUNT { (n)--() } > $min
RETURN n.id AS id
