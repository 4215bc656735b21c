// Every entity with more than $min relationships one way: those that may
// have a pair past SORT_MAX, and the hubs (a dense node's counts come from
// its degree store).
MATCH (n:Entity) WHERE COUNT { (n)-->() } > $min OR COUNT { (n)<--() } > $min
RETURN n.id AS id
