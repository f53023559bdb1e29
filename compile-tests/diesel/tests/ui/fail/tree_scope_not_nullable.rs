use ordered_diesel::Ordered;

diesel::table! { folders (id) { id -> BigInt, parent_id -> BigInt, position -> BigInt, } }

// a tree (the parent is this table) needs a nullable parent column for its root list
#[derive(Ordered)]
#[diesel(table_name = folders)]
#[ordered(scope = parent_id, parent = folders)]
struct Folder { id: i64, parent_id: i64, position: i64 }

fn main() {}
