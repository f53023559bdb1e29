use ordered_seaorm::DeriveOrdered;

#[derive(DeriveOrdered)]
#[ordered(parent_table = "playlists")]
pub struct Track {
    #[ordered(scope)]
    pub playlist_id: i64,
    #[ordered(position)]
    pub position: i64,
}

fn main() {}
