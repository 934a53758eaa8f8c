use std::collections::HashMap;

pub struct Cache {
    items: HashMap<String, String>,
}

pub enum Event {
    Hit,
    Miss(String),
}

pub trait Store {
    fn get(&self, key: &str) -> Option<&String>;
}

impl Cache {
    pub fn new() -> Self {
        Cache { items: HashMap::new() }
    }

    pub fn insert(&mut self, k: String, v: String) {
        self.items.insert(k, v);
    }
}

pub fn hash(s: &str) -> u64 {
    s.len() as u64
}

type Map = HashMap<String, u32>;
