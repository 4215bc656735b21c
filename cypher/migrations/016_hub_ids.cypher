// The kept relation counts of hubs, by entity id.
CREATE CONSTRAINT tog_hub_id IF NOT EXISTS FOR (h:TogHub) REQUIRE h.id IS UNIQUE
