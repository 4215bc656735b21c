// How many KG nodes lack their sample key (a database made before nodes had one).
MATCH (n) WHERE (n:Entity OR n:Value) AND n.sk IS NULL
RETURN count(n) AS n
