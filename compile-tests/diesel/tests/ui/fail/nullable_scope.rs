use ordered_diesel::Ordered;

diesel::table! { folders (id) { id -> BigInt, parent_id -> Nullable<BigInt>, position -> BigInt, } }

// a tree's nullable scope (NULL: the root list) is not supported yet
#[derive(Ordered)]
#[diesel(table_name = folders)]
#[ordered(scope = parent_id, parent = folders)]
struct Folder { id: i64, parent_id: Option<i64>, position: i64 }

fn main() {}
