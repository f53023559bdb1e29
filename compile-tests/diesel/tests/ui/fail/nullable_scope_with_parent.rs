use ordered_diesel::Ordered;

diesel::table! { projects (id) { id -> BigInt, } }
diesel::table! { tasks (id) { id -> BigInt, project_id -> Nullable<BigInt>, position -> BigInt, } }

// NULL names the root list, which has no project row to lock
#[derive(Ordered)]
#[diesel(table_name = tasks)]
#[ordered(scope = project_id, parent = projects)]
struct Task { id: i64, project_id: Option<i64>, position: i64 }

fn main() {}
