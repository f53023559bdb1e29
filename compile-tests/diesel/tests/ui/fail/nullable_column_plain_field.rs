use ordered_diesel::Ordered;

diesel::table! { tasks (id) { id -> BigInt, project_id -> Nullable<BigInt>, position -> BigInt, } }

// the column is nullable: the field must be `Option<i64>`
#[derive(Ordered)]
#[diesel(table_name = tasks)]
#[ordered(scope = project_id)]
struct Task { id: i64, project_id: i64, position: i64 }

fn main() {}
