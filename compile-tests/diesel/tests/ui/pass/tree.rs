use ordered_diesel::Ordered;

diesel::table! { folders (id) { id -> BigInt, parent_id -> Nullable<BigInt>, position -> BigInt, } }

// a tree: the parent is a row of the same table, NULL the root list; removing a folder
// puts its children in its place
#[derive(Ordered)]
#[diesel(table_name = folders)]
#[ordered(scope = parent_id, parent = folders, removal = lift)]
struct Folder {
    id: i64,
    parent_id: Option<i64>,
    position: i64,
}

// a nullable scope with no parent table: tasks with no project are one more list
diesel::table! { tasks (id) { id -> BigInt, project_id -> Nullable<BigInt>, position -> BigInt, } }

#[derive(Ordered)]
#[diesel(table_name = tasks)]
#[ordered(scope = project_id)]
struct Task {
    id: i64,
    project_id: Option<i64>,
    position: i64,
}

pub fn main() {
    assert_eq!(
        <Folder as Ordered>::SPEC.null_scope,
        ordered_diesel::NullScope::Tree
    );
    assert_eq!(
        <Task as Ordered>::SPEC.null_scope,
        ordered_diesel::NullScope::Root
    );
    assert_eq!(<Folder as Ordered>::SPEC.removal, ordered_diesel::Removal::Lift);
    assert_eq!(<Task as Ordered>::SPEC.removal, ordered_diesel::Removal::Cascade);
}
